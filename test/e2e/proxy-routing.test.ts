/**
 * Routing and forwarding: session stickiness across instances, header handling, relayed
 * upstream errors, admin endpoints. Failures and fail-over: proxy-failures.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { request } from 'undici';
import { LEGACY_POST_HEADERS, initializeSession, startStack, type Stack } from './support/harness.js';
import { readMessages } from './support/reply-messages.js';

/** A POST with node:http: fetch drops Connection and refuses Expect, which these tests need. */
function postRaw(url: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers });
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    if (headers.expect) req.once('continue', () => req.end(body));
    else if (headers['transfer-encoding'] === 'chunked') {
      // Two chunks and no length: the gateway must read the whole body and send its length on.
      req.write(body.slice(0, 10));
      req.end(body.slice(10));
    } else req.end(body);
  });
}

function callEcho(url: string, sessionId: string, id: number, extraHeaders: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': sessionId, ...extraHeaders },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: `hi ${id}` } } }),
  });
}

describe('2025-era sessions stick to the instance that answered initialize', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ count: 2 });
  });
  after(() => stack.close());

  it('spreads new sessions and keeps each on its instance', async () => {
    const sessions: string[] = [];
    for (let i = 0; i < 6; i++) sessions.push(await initializeSession(stack.gw.url));
    for (const s of stack.servers) s.stats.reset();
    for (const [i, sid] of sessions.entries()) {
      for (let n = 0; n < 3; n++) {
        const res = await callEcho(stack.gw.url, sid, 100 + i * 10 + n);
        assert.equal(res.status, 200);
        const [message] = (await readMessages(res)) as Array<{ result: { content: Array<{ text: string }> } }>;
        assert.match(message!.result.content[0]!.text, /hi/);
      }
    }
    const perInstance = stack.servers.map((s) => new Set(s.stats.requests.map((r) => r.sessionId)));
    assert.ok(perInstance[0]!.size > 0 && perInstance[1]!.size > 0, 'round-robin did not use both instances');
    for (const sid of sessions) {
      const holders = perInstance.filter((set) => set.has(sid)).length;
      assert.equal(holders, 1, `session ${sid} reached ${holders} instances`);
    }
  });

  it('answers 404 for a session it never saw, without asking a backend', async () => {
    for (const s of stack.servers) s.stats.reset();
    const res = await callEcho(stack.gw.url, 'no-such-session', 1);
    assert.equal(res.status, 404);
    const body = (await res.json()) as { error: { code: number } };
    assert.equal(body.error.code, -32600);
    assert.equal(stack.servers.reduce((n, s) => n + s.stats.requests.length, 0), 0);
  });

  it('forgets a session after DELETE', async () => {
    const sid = await initializeSession(stack.gw.url);
    const del = await fetch(stack.gw.url, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(del.status, 200);
    await del.text();
    const res = await callEcho(stack.gw.url, sid, 2);
    assert.equal(res.status, 404);
    await res.text();
  });
});

describe('forwarding', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ server: { enableJsonResponse: true } });
  });
  after(() => stack.close());

  it('forwards MCP headers, sets X-Forwarded-*, strips hop-by-hop headers', async () => {
    const sid = await initializeSession(stack.gw.url);
    const backend = stack.servers[0]!;
    backend.stats.reset();
    const res = await callEcho(stack.gw.url, sid, 5, {
      'mcp-param-region': 'eu',
      'mcp-method': 'tools/call',
      'mcp-name': 'echo',
      'x-forwarded-for': '6.6.6.6',
      te: 'trailers',
      'proxy-authorization': 'Basic c2VjcmV0',
      'x-request-id': 'req-abc.1',
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-request-id'), 'req-abc.1');
    await res.text();
    const seen = backend.stats.requests.at(-1)!;
    assert.equal(seen.headers['mcp-param-region'], 'eu');
    assert.equal(seen.headers['mcp-method'], 'tools/call');
    assert.equal(seen.headers['mcp-name'], 'echo');
    assert.equal(seen.headers['mcp-session-id'], sid);
    assert.equal(seen.headers['mcp-protocol-version'], '2025-11-25');
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1', 'an untrusted client X-Forwarded-For must be replaced');
    assert.equal(seen.headers['x-forwarded-proto'], 'http');
    assert.match(String(seen.headers['x-forwarded-host']), /^127\.0\.0\.1:\d+$/);
    assert.equal(seen.headers['x-request-id'], 'req-abc.1');
    assert.equal(seen.headers.te, undefined);
    assert.equal(seen.headers['proxy-authorization'], undefined);
  });

  it('names the backend in Host, keeps the query string, and drops the headers the client\'s Connection lists', async () => {
    const sid = await initializeSession(stack.gw.url);
    const backend = stack.servers[0]!;
    backend.stats.reset();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi 6' } } });
    // node:http, not fetch: fetch drops a Connection header it is given.
    const status = await postRaw(`${stack.gw.url}?tenant=a&x=%20y`, { ...LEGACY_POST_HEADERS, 'mcp-session-id': sid, connection: 'keep-alive, X-Drop-Me', 'x-drop-me': 'secret', 'x-keep-me': 'kept' }, body);
    assert.equal(status, 200);
    const seen = backend.stats.requests.at(-1)!;
    assert.equal(seen.url, `${new URL(backend.url).pathname}?tenant=a&x=%20y`);
    assert.equal(seen.headers.host, new URL(backend.url).host);
    assert.equal(seen.headers['x-drop-me'], undefined, 'a header the client marked hop-by-hop must not travel on');
    assert.equal(seen.headers['x-keep-me'], 'kept');
    assert.equal(seen.headers['content-length'], String(Buffer.byteLength(body)));
  });

  it('forwards a chunked request body with its length', async () => {
    const sid = await initializeSession(stack.gw.url);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'echo', arguments: { text: 'chunked' } } });
    const status = await postRaw(stack.gw.url, { ...LEGACY_POST_HEADERS, 'mcp-session-id': sid, 'transfer-encoding': 'chunked' }, body);
    assert.equal(status, 200);
    const seen = stack.servers[0]!.stats.requests.at(-1)!;
    assert.equal(seen.headers['transfer-encoding'], undefined);
    assert.equal(seen.headers['content-length'], String(Buffer.byteLength(body)));
  });

  it('forwards a request that asked for 100-continue (curl does, for bodies over 1 KiB)', async () => {
    const sid = await initializeSession(stack.gw.url);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x'.repeat(2000) } } });
    const status = await postRaw(stack.gw.url, { ...LEGACY_POST_HEADERS, 'mcp-session-id': sid, expect: '100-continue' }, body);
    assert.equal(status, 200, 'the gateway answered the expectation itself; the backend must not be handed it');
    assert.equal(stack.servers[0]!.stats.requests.at(-1)!.headers.expect, undefined);
  });

  it('answers POST and GET on the route path with and without a trailing slash, as one route', async () => {
    // POST has a route of its own beside @fastify/http-proxy's (GET, DELETE, the rest): both
    // must match the same URLs.
    const backend = stack.servers[0]!;
    for (const path of [stack.gw.url, `${stack.gw.url}/`]) {
      backend.stats.reset();
      const sid = await initializeSession(path);
      const res = await callEcho(path, sid, 9);
      assert.equal(res.status, 200, `POST ${path}`);
      assert.match(await res.text(), /hi 9/);
      const stream = await request(path, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
      assert.notEqual(stream.statusCode, 404, `GET ${path}`);
      assert.notEqual(stream.statusCode, 405, `GET ${path}`);
      await stream.body.destroy();
      assert.ok(backend.stats.requests.some((r) => r.method === 'GET'), `GET ${path} reached the backend`);
    }
    const other = await request(`${stack.gw.url}/other`, { method: 'POST', headers: LEGACY_POST_HEADERS, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    assert.equal(other.statusCode, 404);
    await other.body.dump();
  });

  it('relays a JSON-RPC error body on a 4xx from the backend untouched', async () => {
    const sid = await initializeSession(stack.gw.url);
    const direct = await request(stack.servers[0]!.url, {
      method: 'POST',
      headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '1999-01-01' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    const directBody = await direct.body.text();
    const via = await request(stack.gw.url, {
      method: 'POST',
      headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '1999-01-01' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    assert.equal(via.statusCode, direct.statusCode);
    assert.ok(via.statusCode >= 400 && via.statusCode < 500);
    assert.equal(await via.body.text(), directBody);
  });
});

describe('admin listener', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack.close());

  it('serves healthz, readyz and metrics on its own port only', async () => {
    assert.equal((await fetch(`${stack.gw.adminUrl}/healthz`)).status, 200);
    const ready = await fetch(`${stack.gw.adminUrl}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(((await ready.json()) as { checks: unknown }).checks, { listener: true, store: true });
    await initializeSession(stack.gw.url);
    const metrics = await (await fetch(`${stack.gw.adminUrl}/metrics`)).text();
    assert.match(metrics, /taskgate_http_requests_total\{route="\/mcp",method="POST",rpc_method="initialize",status="200"\} 1\b/);
    assert.match(metrics, /taskgate_http_request_duration_seconds_bucket/);
    assert.match(metrics, /taskgate_process_cpu_user_seconds_total/);
    const onProxy = await fetch(new URL('/metrics', stack.gw.url));
    assert.equal(onProxy.status, 404);
    await onProxy.text();
  });
});
