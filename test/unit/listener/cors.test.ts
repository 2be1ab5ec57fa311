import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { parseConfig } from '../../../src/config/index.js';
import { CorsRules, isPreflight, replaceRelayedCorsHeaders } from '../../../src/listener/cors.js';
import { buildHostOriginPolicy } from '../../../src/listener/host-origin.js';
import { issuesOf, MINIMAL } from '../config/policies.js';

function corsOf(listen: string, publicUrl = 'https://mcp.example.com'): CorsRules {
  const config = parseConfig(`${MINIMAL.replace('https://mcp.example.com', publicUrl)}listen:\n${listen}`, { env: {} });
  assert.equal(config.listen.cors.mode, 'allowed-origins');
  if (config.listen.cors.mode !== 'allowed-origins') throw new Error('unreachable');
  return new CorsRules(config.listen.cors, buildHostOriginPolicy(config.publicUrl, config.listen.allowedHosts, config.listen.allowedOrigins));
}

describe('CORS rules', () => {
  it('admits exactly the origins the Origin check admits', () => {
    const cors = corsOf('  allowedOrigins: [https://app.example.com]\n');
    assert.equal(cors.allows('https://app.example.com'), true);
    assert.equal(cors.allows('https://mcp.example.com'), true, 'the publicUrl origin');
    assert.equal(cors.allows('https://app.example.com:8443'), false);
    assert.equal(cors.allows('http://localhost:3000'), false);
    assert.equal(cors.allows('null'), false);
    // A loopback publicUrl without allowedOrigins admits any loopback origin, and only those.
    const local = corsOf('  port: 8080\n', 'http://127.0.0.1:8080');
    assert.equal(local.allows('http://localhost:6274'), true);
    assert.equal(local.allows('https://evil.example'), false);
  });

  it('names the origin, never `*` nor credentials, and varies by Origin on every answer', () => {
    const cors = corsOf('  allowedOrigins: [https://app.example.com]\n');
    assert.deepEqual(cors.answerHeaders(undefined), { vary: 'Origin' });
    const answer = cors.answerHeaders('https://app.example.com');
    assert.equal(answer['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(answer['access-control-expose-headers'], 'Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, Retry-After, X-Request-Id');
    assert.equal(answer['access-control-allow-credentials'], undefined);
    const preflight = cors.preflightHeaders('https://app.example.com');
    assert.equal(preflight['access-control-allow-methods'], 'GET, POST, DELETE');
    assert.equal(
      preflight['access-control-allow-headers'],
      'Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, traceparent, tracestate, X-Request-Id',
    );
    assert.equal(preflight['access-control-max-age'], '600');
    assert.equal(preflight.vary, 'Origin');
  });

  it('adds the policy\'s headers after the built-in ones, once each', () => {
    const cors = corsOf('  cors: { mode: allowed-origins, allowedHeaders: [X-Client-Build, authorization, x-client-build], exposedHeaders: [X-Build], maxAge: 1500ms }\n');
    const preflight = cors.preflightHeaders('https://mcp.example.com');
    assert.match(preflight['access-control-allow-headers']!, /, X-Request-Id, x-client-build$/);
    assert.equal(preflight['access-control-max-age'], '1');
    assert.match(cors.answerHeaders('https://mcp.example.com')['access-control-expose-headers']!, /, X-Request-Id, x-build$/);
  });

  it('takes as a preflight only an OPTIONS with an Origin and Access-Control-Request-Method', () => {
    assert.equal(isPreflight('OPTIONS', { origin: 'https://a.example', 'access-control-request-method': 'POST' }), true);
    assert.equal(isPreflight('OPTIONS', { origin: 'https://a.example' }), false);
    assert.equal(isPreflight('OPTIONS', { 'access-control-request-method': 'POST' }), false);
    assert.equal(isPreflight('POST', { origin: 'https://a.example', 'access-control-request-method': 'POST' }), false);
  });

  it('drops a backend\'s Access-Control-* and keeps Origin in its Vary', () => {
    const relayed: IncomingHttpHeaders = {
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'x',
      vary: 'Accept-Encoding',
      'mcp-session-id': 's1',
    };
    replaceRelayedCorsHeaders(relayed);
    assert.deepEqual(relayed, { vary: 'Accept-Encoding, Origin', 'mcp-session-id': 's1' });
    const cases: [string | string[] | undefined, string][] = [
      [undefined, 'Origin'],
      ['origin', 'origin'],
      ['Accept, ORIGIN', 'Accept, ORIGIN'],
      ['*', '*'],
      [['Accept', 'Accept-Encoding'], 'Accept, Accept-Encoding, Origin'],
    ];
    for (const [vary, expected] of cases) {
      const headers = { vary } as IncomingHttpHeaders;
      replaceRelayedCorsHeaders(headers);
      assert.equal(headers.vary, expected, `Vary: ${String(vary)}`);
    }
  });
});

describe('listen.cors in the policy', () => {
  it('is on by default, and can be turned off', () => {
    assert.equal(parseConfig(MINIMAL, { env: {} }).listen.cors.mode, 'allowed-origins');
    assert.deepEqual(parseConfig(`${MINIMAL}listen: { cors: { mode: none } }\n`, { env: {} }).listen.cors, { mode: 'none' });
  });

  it('refuses wildcards, bad header names, a preflight cache past 24h, and keys of the other mode', () => {
    const issues = issuesOf(`${MINIMAL}listen:\n  cors: { mode: allowed-origins, allowedHeaders: ["*"], exposedHeaders: ["a b"], maxAge: 2d }\n`);
    assert.deepEqual(issues.map((i) => i.path).sort(), ['listen.cors.allowedHeaders[0]', 'listen.cors.exposedHeaders[0]', 'listen.cors.maxAge']);
    const other = issuesOf(`${MINIMAL}listen:\n  cors: { mode: none, maxAge: 1m }\n`);
    assert.deepEqual(other.map((i) => i.path), ['listen.cors.maxAge']);
    const mode = issuesOf(`${MINIMAL}listen:\n  cors: { mode: any }\n`);
    assert.deepEqual(mode.map((i) => i.path), ['listen.cors.mode']);
  });
});
