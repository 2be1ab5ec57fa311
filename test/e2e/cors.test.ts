/**
 * CORS at the gateway, header by header (the browser's view is test/e2e/cors-browser.test.ts):
 * preflights answered by the gateway before authentication, for exactly the origins the
 * Origin check admits; Access-Control-Allow-Origin on every answer to them, the gateway's own
 * errors and the protected-resource metadata included; a backend's own CORS headers replaced.
 * The backend is the SDK's example server behind a forwarder that adds a CORS `*` policy of its
 * own to every answer, as SDK servers with a CORS middleware do.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { startBackendProxy, type BackendProxy } from './support/backend-proxy.js';
import { LEGACY_POST_HEADERS, initializeBody, startGateway, startJwksServer, testPolicy, waitReady, type GatewayUnderTest, type JwksServer } from './support/harness.js';

const RESOURCE = 'http://127.0.0.1/mcp';
// Loopback origins: the example backend checks Origin itself (as a loopback server must) and
// refuses any other, while the gateway's own check admits only APP.
const APP = 'http://localhost:5173';
const STRANGER = 'http://localhost:5174';
const BACKEND_CORS = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'Mcp-Session-Id', 'access-control-allow-credentials': 'true', vary: 'Accept-Encoding' };
const MCP_REQUEST_HEADERS = ['content-type', 'accept', 'authorization', 'mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'last-event-id', 'traceparent', 'tracestate'];

type Headers = Record<string, string | string[] | undefined>;

async function send(url: string, method: 'GET' | 'POST' | 'OPTIONS', headers: Record<string, string>, body?: string): Promise<{ status: number; headers: Headers }> {
  const res = await request(url, { method, headers, body });
  await res.body.text();
  return { status: res.statusCode, headers: res.headers };
}

function preflight(url: string, origin: string): Promise<{ status: number; headers: Headers }> {
  return send(url, 'OPTIONS', { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, mcp-session-id' });
}

const names = (value: string | string[] | undefined) => String(value ?? '').split(',').map((name) => name.trim().toLowerCase()).filter(Boolean);
const corsHeadersOf = (headers: Headers) => Object.keys(headers).filter((name) => name.startsWith('access-control-'));

describe('listen.cors mode allowed-origins (the default)', () => {
  let backend: ExampleServer;
  let proxy: BackendProxy;
  let jwks: JwksServer;
  let gw: GatewayUnderTest;
  let metadataUrl: string;
  before(async () => {
    backend = await startExampleServer();
    proxy = await startBackendProxy(backend.url, { responseHeaders: BACKEND_CORS });
    jwks = await startJwksServer();
    gw = await startGateway(
      testPolicy([proxy.url], {
        listen: { host: '127.0.0.1', port: 0, allowedOrigins: [APP], cors: { mode: 'allowed-origins', allowedHeaders: ['X-Client-Build'], exposedHeaders: ['X-Backend-Build'], maxAge: '90s' } },
        auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
      }),
    );
    await waitReady(gw);
    metadataUrl = new URL('/.well-known/oauth-protected-resource/mcp', gw.url).href;
  });
  after(async () => {
    await gw?.close();
    await jwks?.close();
    await proxy?.close();
    await backend?.close();
  });

  it('answers a preflight from an allowed origin itself, without a token: 204 with the policy\'s lists, and the backend sees nothing', async () => {
    const seen = backend.stats.requests.length;
    const answer = await preflight(gw.url, APP);
    assert.equal(answer.status, 204);
    assert.equal(answer.headers['access-control-allow-origin'], APP);
    assert.deepEqual(names(answer.headers['access-control-allow-methods']), ['get', 'post', 'delete']);
    const allowed = names(answer.headers['access-control-allow-headers']);
    for (const name of [...MCP_REQUEST_HEADERS, 'x-client-build']) assert.ok(allowed.includes(name), `${name} is not an allowed request header: ${allowed.join(', ')}`);
    assert.equal(answer.headers['access-control-max-age'], '90');
    assert.equal(answer.headers['access-control-allow-credentials'], undefined);
    assert.ok(names(answer.headers.vary).includes('origin'));
    // The preflight is the gateway's answer; the request that would reach the backend is the next one.
    assert.equal(backend.stats.requests.length, seen, 'the preflight reached the backend');
  });

  it('refuses a preflight from an origin the Origin check refuses: 403, and no Access-Control-* header', async () => {
    const answer = await preflight(gw.url, STRANGER);
    assert.equal(answer.status, 403);
    assert.deepEqual(corsHeadersOf(answer.headers), []);
  });

  it('makes the gateway\'s own 401 readable by an allowed origin: Access-Control-Allow-Origin, WWW-Authenticate exposed', async () => {
    const answer = await send(gw.url, 'POST', { ...LEGACY_POST_HEADERS, origin: APP }, initializeBody());
    assert.equal(answer.status, 401);
    assert.match(String(answer.headers['www-authenticate']), /^Bearer /);
    assert.equal(answer.headers['access-control-allow-origin'], APP);
    const exposed = names(answer.headers['access-control-expose-headers']);
    for (const name of ['www-authenticate', 'mcp-session-id', 'mcp-protocol-version', 'retry-after', 'x-backend-build']) assert.ok(exposed.includes(name), `${name} is not exposed: ${exposed.join(', ')}`);
  });

  it('replaces the backend\'s own CORS on a relayed answer: the origin, never `*` or credentials; Vary keeps the backend\'s and adds Origin', async () => {
    const token = await jwks.mint({ aud: RESOURCE });
    const answer = await send(gw.url, 'POST', { ...LEGACY_POST_HEADERS, origin: APP, authorization: `Bearer ${token}` }, initializeBody());
    assert.equal(answer.status, 200);
    assert.ok(answer.headers['mcp-session-id'], 'the backend opened no session');
    assert.equal(answer.headers['access-control-allow-origin'], APP);
    assert.equal(answer.headers['access-control-allow-credentials'], undefined);
    assert.ok(names(answer.headers['access-control-expose-headers']).includes('www-authenticate'), 'the backend\'s expose list was relayed');
    assert.deepEqual(names(answer.headers.vary), ['accept-encoding', 'origin']);
  });

  it('marks an answer to a request without Origin as varying by it, with no Access-Control-Allow-Origin', async () => {
    const answer = await send(gw.url, 'POST', { ...LEGACY_POST_HEADERS }, initializeBody());
    assert.equal(answer.status, 401);
    assert.deepEqual(names(answer.headers.vary), ['origin']);
    assert.deepEqual(corsHeadersOf(answer.headers), []);
  });

  it('leaves an OPTIONS that is no preflight to auth and the mcp stage (405), readable by the allowed origin', async () => {
    const answer = await send(gw.url, 'OPTIONS', { origin: APP, authorization: `Bearer ${await jwks.mint({ aud: RESOURCE })}` });
    assert.equal(answer.status, 405);
    assert.equal(answer.headers['access-control-allow-origin'], APP);
  });

  it('serves the protected-resource metadata to an allowed origin with CORS, and to another without', async () => {
    const allowed = await send(metadataUrl, 'GET', { origin: APP });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers['access-control-allow-origin'], APP);
    assert.ok(names(allowed.headers.vary).includes('origin'));
    const other = await send(metadataUrl, 'GET', { origin: STRANGER });
    assert.equal(other.status, 200);
    assert.deepEqual(corsHeadersOf(other.headers), []);

    const asked = await send(metadataUrl, 'OPTIONS', { origin: APP, 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' });
    assert.equal(asked.status, 204);
    assert.equal(asked.headers['access-control-allow-origin'], APP);
    assert.ok(names(asked.headers['access-control-allow-headers']).includes('mcp-protocol-version'));
    const refused = await send(metadataUrl, 'OPTIONS', { origin: STRANGER, 'access-control-request-method': 'GET' });
    assert.equal(refused.status, 403);
    assert.deepEqual(corsHeadersOf(refused.headers), []);
  });
});

describe('listen.cors mode none', () => {
  let backend: ExampleServer;
  let proxy: BackendProxy;
  let gw: GatewayUnderTest;
  const policy = (cors: Record<string, unknown>) => testPolicy([proxy.url], { listen: { host: '127.0.0.1', port: 0, allowedOrigins: [APP], cors } });
  before(async () => {
    backend = await startExampleServer();
    proxy = await startBackendProxy(backend.url, { responseHeaders: BACKEND_CORS });
    gw = await startGateway(policy({ mode: 'none' }));
  });
  after(async () => {
    await gw?.close();
    await proxy?.close();
    await backend?.close();
  });

  it('leaves preflights to the mcp stage and relays the backend\'s CORS untouched (an ingress answers CORS then)', async () => {
    const asked = await preflight(gw.url, APP);
    assert.equal(asked.status, 405);
    assert.deepEqual(corsHeadersOf(asked.headers), []);
    const relayed = await send(gw.url, 'POST', { ...LEGACY_POST_HEADERS, origin: APP }, initializeBody());
    assert.equal(relayed.status, 200);
    assert.equal(relayed.headers['access-control-allow-origin'], '*');
    assert.equal(relayed.headers.vary, 'Accept-Encoding');
  });

  it('answers preflights from the next request on once a reload turns CORS on', async () => {
    const result = await gw.gateway.reload(policy({ mode: 'allowed-origins' }));
    assert.equal(result.outcome, 'applied', JSON.stringify(result));
    const asked = await preflight(gw.url, APP);
    assert.equal(asked.status, 204);
    assert.equal(asked.headers['access-control-allow-origin'], APP);
  });
});
