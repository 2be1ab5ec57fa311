/**
 * RFC 8693 token exchange end to end, against a real authorization server (oidc-provider with
 * the token-exchange grant registered) and a backend (the 2026 example MCP server) behind a
 * resource server that verifies every token with jose: audience, issuer, subject, scopes.
 * Nothing of the exchange is mocked; the client's own token never reaches the backend.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { startBearerGuard, type BearerGuard } from './support/bearer-guard.js';
import { startExchangeServer, type ExchangeServer } from './support/exchange-server.js';
import { startGateway, startJwksServer, testPolicy, type GatewayUnderTest, type JwksServer, waitUntilReady } from './support/harness.js';
import { createModernTaskClient, type ModernTaskClient } from './support/modern-client.js';

const TOOLS = 'http://tools.internal/mcp';
const ROUTES = ['/mcp', '/post', '/jwt', '/nowhere', '/wide', '/fresh', '/slow', '/static'] as const;
type RoutePath = (typeof ROUTES)[number];

function sample(metrics: string, series: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('upstream credentials by RFC 8693 token exchange', () => {
  let jwks: JwksServer;
  let as: ExchangeServer;
  let backend: ModernTaskServer;
  let guard: BearerGuard;
  let gw: GatewayUnderTest;
  const logLines: string[] = [];
  const clients: ModernTaskClient[] = [];
  const clientTokens: string[] = [];

  /** A 2026 client acting as `subject` on one of the gateway's routes. */
  const client = async (subject: string, path: RoutePath = '/mcp'): Promise<ModernTaskClient> => {
    const token = await jwks.mint({ sub: subject, aud: `http://127.0.0.1${path}` });
    clientTokens.push(token);
    const c = await createModernTaskClient(gw.url.replace(/\/mcp$/, path), { headers: { authorization: `Bearer ${token}` } });
    clients.push(c);
    return c;
  };
  let nextId = 1;
  /** One JSON-RPC request over plain fetch, for answers an SDK client would refuse to connect through. */
  const rawCall = async (subject: string, path: RoutePath) => {
    const token = await jwks.mint({ sub: subject, aud: `http://127.0.0.1${path}` });
    clientTokens.push(token);
    const id = nextId++;
    const params = {
      name: 'quick_echo',
      arguments: { text: 'hi' },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    };
    const response = await fetch(gw.url.replace(/\/mcp$/, path), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'quick_echo',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }),
    });
    const body = (await response.json()) as { id: unknown; error?: { code: number; message: string; data?: unknown } };
    return { id, status: response.status, headers: response.headers, body };
  };
  const echo = (c: ModernTaskClient) => c.raw('tools/call', { name: 'quick_echo', arguments: { text: 'hi' } }, { envelope: 'plain' });
  const grantsFor = (subject: string, clientId?: string) => as.granted.filter((g) => g.subject === subject && (clientId === undefined || g.clientId === clientId)).length;

  before(async () => {
    jwks = await startJwksServer({ algs: ['ES256'] });
    as = await startExchangeServer({
      subjectIssuer: jwks,
      subjectAudiences: ROUTES.map((path) => `http://127.0.0.1${path}`),
      targets: [{ resource: TOOLS, scopes: ['tools:call', 'tools:admin'] }],
      deniedSubjects: ['eve'],
    });
    backend = await startModernTaskServer({ pollIntervalMs: 100 });
    guard = await startBearerGuard({ backendUrl: backend.url, issuer: as.issuer, jwksUri: as.jwksUri, audience: TOOLS, requiredScopes: ['tools:call'] });
    const basic = { method: 'client_secret_basic', id: as.clients.basic.id, secret: as.clients.basic.secret };
    const exchange = (overrides: Record<string, unknown> = {}) => ({
      instances: [guard.origin],
      credentials: { type: 'token-exchange', tokenEndpoint: as.tokenEndpoint, audience: TOOLS, resource: TOOLS, scopes: ['tools:call'], client: basic, ...overrides },
    });
    const upstreams = {
      basic: exchange(),
      post: exchange({ client: { method: 'client_secret_post', id: as.clients.post.id, secret: as.clients.post.secret } }),
      jwt: exchange({ client: { method: 'private_key_jwt', id: as.clients.jwt.id, privateKey: as.clients.jwt.privateKeyPem, algorithm: 'ES256' } }),
      nowhere: exchange({ audience: undefined, resource: 'http://nowhere.internal/mcp' }),
      wide: exchange({ scopes: ['tools:call', 'tools:delete'] }),
      fresh: exchange({ cache: { maxEntries: 0 } }),
      slow: exchange({ timeout: '300ms', cache: { maxEntries: 0 } }),
      static: { instances: [guard.origin], credentials: { type: 'bearer', token: 'not-a-token-the-backend-knows' } },
    };
    const upstreamOf: Record<RoutePath, keyof typeof upstreams> = {
      '/mcp': 'basic',
      '/post': 'post',
      '/jwt': 'jwt',
      '/nowhere': 'nowhere',
      '/wide': 'wide',
      '/fresh': 'fresh',
      '/slow': 'slow',
      '/static': 'static',
    };
    const policy = testPolicy([backend.url], {
      auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
      upstreams,
      routes: ROUTES.map((path) => ({ path, upstream: upstreamOf[path], upstreamPath: '/mcp' })),
      logging: { level: 'debug' },
    });
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    gw = await startGateway(policy, { logger: pino({ level: 'debug' }, sink) });
    await waitUntilReady(gw.adminUrl);
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await gw?.close();
    await Promise.all([guard?.close(), backend?.close(), as?.close(), jwks?.close()]);
  });

  it('sends the backend a token minted for it, bound to the caller, with the narrowed scope, whichever client authentication', async () => {
    const expected: [RoutePath, string][] = [
      ['/mcp', as.clients.basic.id],
      ['/post', as.clients.post.id],
      ['/jwt', as.clients.jwt.id],
    ];
    for (const [path, clientId] of expected) {
      const alice = await client('alice', path);
      const answer = await echo(alice);
      assert.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.response)}`);
      assert.deepEqual(answer.response?.result?.content, [{ type: 'text', text: 'hi' }]);
      // The SDK client may send tools/list in the background after connecting: the call is the last tools/call.
      const call = guard.verified.filter((v) => v.rpcMethod === 'tools/call').at(-1);
      assert.ok(call, `${path}: the backend verified no tools/call`);
      assert.equal(call.claims.sub, 'alice', 'the same user');
      assert.equal(call.claims.aud, TOOLS, 'minted for the backend, not for the gateway');
      assert.equal(call.claims.scope, 'tools:call', 'only the scope the gateway asked for');
      assert.equal(call.claims.client_id, clientId, `${path} authenticated as ${clientId}`);
      assert.equal(grantsFor('alice', clientId), 1);
    }
    for (const { token } of guard.verified) assert.ok(!clientTokens.includes(token), 'the client\'s own token never reached the backend');
  });

  it('keeps exchanged tokens per principal, and concurrent requests share one exchange', async () => {
    const carol = await client('carol');
    const answers = await Promise.all(Array.from({ length: 6 }, () => echo(carol)));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200]);
    assert.equal(grantsFor('carol'), 1, 'one exchange for six concurrent calls');
    assert.equal((await echo(carol)).status, 200);
    assert.equal(grantsFor('carol'), 1, 'then the cached token');
    const dave = await client('dave');
    assert.equal((await echo(dave)).status, 200);
    assert.equal(grantsFor('dave'), 1, 'another principal gets its own');
    const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    assert.ok(sample(metrics, 'taskgate_token_exchanges_total{upstream="basic",outcome="cache_hit"}') + sample(metrics, 'taskgate_token_exchanges_total{upstream="basic",outcome="shared"}') >= 6);
    assert.ok(sample(metrics, 'taskgate_token_exchange_seconds_count{upstream="basic"}') >= 3);
  });

  it('answers a refused exchange 403 with the OAuth error, and nothing reaches the backend', async () => {
    const reached = guard.verified.length;
    // The gateway's own generation probe of the `static` upstream (src/bridge/) was refused at start.
    const refusedBefore = guard.refusals.length;
    const cases: [string, RoutePath, string][] = [
      ['eve', '/mcp', 'invalid_grant'],
      ['alice', '/nowhere', 'invalid_target'],
      ['alice', '/wide', 'invalid_scope'],
    ];
    for (const [subject, path, error] of cases) {
      const answer = await rawCall(subject, path);
      assert.equal(answer.status, 403, `${subject} on ${path}`);
      assert.equal(answer.body.error?.code, -31007);
      assert.equal(answer.body.id, answer.id);
      assert.deepEqual(answer.body.error?.data, { error });
      assert.equal(answer.headers.get('www-authenticate'), null, 'not a challenge: the client\'s token is fine');
    }
    assert.equal(guard.verified.length, reached);
    assert.equal(guard.refusals.length, refusedBefore, 'nothing was even attempted upstream');
  });

  it('answers 503 with Retry-After when the authorization server is slow or down, and nothing reaches the backend', async () => {
    const alice = await client('alice', '/slow');
    const reached = guard.verified.length;
    as.delayMs = 3000;
    try {
      const slow = await echo(alice);
      assert.equal(slow.status, 503);
      assert.equal(slow.headers.get('retry-after'), '5');
      assert.equal(slow.response?.error?.code, -31004);
    } finally {
      as.delayMs = 0;
    }
    await as.stop();
    try {
      const down = await echo(alice);
      assert.equal(down.status, 503);
      assert.equal(down.response?.error?.code, -31004);
    } finally {
      await as.start();
    }
    assert.equal(guard.verified.length, reached);
    assert.equal((await echo(alice)).status, 200, 'back once the server answers');
  });

  it('retries once with a fresh exchange when the backend refuses the token, then answers 502 without the backend\'s challenge', async () => {
    const frank = await client('frank');
    assert.equal((await echo(frank)).status, 200);
    assert.equal(grantsFor('frank'), 1);
    const calls = backend.stats.requests.length;

    guard.refuseNext = 1; // the cached token is refused once (revoked at the backend, say)
    const retried = await echo(frank);
    assert.equal(retried.status, 200, 'the retry with a fresh token went through');
    assert.equal(grantsFor('frank'), 2, 'a fresh exchange');

    guard.refuseNext = 2;
    const refused = await echo(frank);
    assert.equal(refused.status, 502);
    assert.equal(refused.response?.error?.code, -31005);
    assert.equal(refused.response?.id, refused.request.body.id);
    assert.match(refused.response?.error?.message ?? '', /refused the gateway's credentials/);
    assert.equal(refused.headers.get('www-authenticate'), null, 'the backend\'s challenge is not relayed');
    assert.equal(grantsFor('frank'), 3, 'one more fresh exchange, no more');
    assert.equal(backend.stats.requests.length - calls, 1, 'only the retried call reached the MCP server');

    // A static bearer the backend does not accept: 502 at once, no retry, no challenge.
    const before = guard.refusals.length;
    const answer = await rawCall('frank', '/static');
    assert.equal(answer.status, 502);
    assert.equal(answer.body.error?.code, -31005);
    assert.equal(answer.headers.get('www-authenticate'), null);
    assert.equal(guard.refusals.length - before, 1);
    // The same for a GET stream, which goes through reply-from: its copied headers go too.
    const token = await jwks.mint({ sub: 'frank', aud: 'http://127.0.0.1/static' });
    const stream = await fetch(gw.url.replace(/\/mcp$/, '/static'), {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-11-25' },
    });
    const streamBody = (await stream.json()) as { error?: { code: number } };
    assert.equal(stream.status, 502);
    assert.equal(stream.headers.get('www-authenticate'), null);
    assert.equal(streamBody.error?.code, -31005);
    assert.equal(guard.refusals.length - before, 2);
    const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    assert.equal(sample(metrics, 'taskgate_upstream_errors_total{upstream="basic",kind="auth_refused"}'), 3);
    assert.equal(sample(metrics, 'taskgate_upstream_errors_total{upstream="static",kind="auth_refused"}'), 2);
  });

  it('keeps a task working across exchanges: created, polled and cancelled under three different tokens of one principal', async () => {
    const grace = await client('grace', '/fresh');
    const from = guard.verified.length;
    const created = await grace.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
    const handle = String(created.response?.result?.taskId);
    assert.equal(created.response?.result?.status, 'working');
    await sleep(150);
    const polled = await grace.raw('tasks/get', { taskId: handle });
    assert.equal(polled.status, 200);
    assert.equal(polled.response?.result?.status, 'working');
    const cancelled = await grace.raw('tasks/cancel', { taskId: handle });
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.response));
    // The SDK client may list tools along the way; the task's own three calls are what count.
    const calls = guard.verified.slice(from).filter((c) => c.rpcMethod !== 'tools/list');
    assert.deepEqual(calls.map((c) => c.rpcMethod), ['tools/call', 'tasks/get', 'tasks/cancel']);
    assert.ok(calls.every((c) => c.claims.sub === 'grace'));
    assert.equal(new Set(calls.map((c) => c.claims.jti)).size, 3, 'three exchanged tokens');
  });

  it('never writes a token to the log', () => {
    const log = logLines.join('');
    assert.ok(log.includes('token exchange refused'), 'the log was captured');
    for (const token of [...clientTokens, ...guard.verified.map((v) => v.token)]) assert.ok(!log.includes(token));
    for (const secret of [as.clients.basic.secret, as.clients.post.secret]) assert.ok(!log.includes(secret));
  });
});

describe('calls the gateway makes itself on a token-exchange upstream', () => {
  it('cancels an expired task upstream with its owner\'s cached exchange', async () => {
    const jwks = await startJwksServer({ algs: ['ES256'] });
    const as = await startExchangeServer({ subjectIssuer: jwks, subjectAudiences: ['http://127.0.0.1/mcp'], targets: [{ resource: TOOLS, scopes: ['tools:call'] }] });
    const backend = await startModernTaskServer({ pollIntervalMs: 100 });
    const guard = await startBearerGuard({ backendUrl: backend.url, issuer: as.issuer, jwksUri: as.jwksUri, audience: TOOLS, requiredScopes: ['tools:call'] });
    const policy = testPolicy([guard.url], {
      auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
      upstreams: {
        tools: {
          instances: [guard.origin],
          credentials: { type: 'token-exchange', tokenEndpoint: as.tokenEndpoint, resource: TOOLS, scopes: ['tools:call'], client: { method: 'client_secret_post', id: as.clients.post.id, secret: as.clients.post.secret } },
        },
      },
      tasks: { ttl: { max: '1s' } },
    });
    const gw = await startGateway(policy);
    let alice: ModernTaskClient | undefined;
    try {
      await waitUntilReady(gw.adminUrl);
      const token = await jwks.mint({ sub: 'alice', aud: 'http://127.0.0.1/mcp' });
      alice = await createModernTaskClient(gw.url, { headers: { authorization: `Bearer ${token}` } });
      const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      assert.equal(created.response?.result?.status, 'working');
      let cancel = guard.verified.find((v) => v.rpcMethod === 'tasks/cancel');
      for (let i = 0; i < 100 && !cancel; i++) {
        await sleep(50);
        cancel = guard.verified.find((v) => v.rpcMethod === 'tasks/cancel');
      }
      assert.ok(cancel, 'the expired task was cancelled upstream');
      assert.equal(cancel.claims.sub, 'alice', 'as its owner, with a token the backend verified');
      assert.equal(as.granted.length, 1, 'the cached exchange, not a new one');
    } finally {
      await alice?.close();
      await gw.close();
      await Promise.all([guard.close(), backend.close(), as.close(), jwks.close()]);
    }
  });
});
