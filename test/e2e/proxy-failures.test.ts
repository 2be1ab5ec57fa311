/**
 * Instances and failures: fail-over from a refusing instance, the only instance refusing,
 * replies over the size limit or cut short, an upstream event stream that goes wrong, and a
 * client that leaves mid-call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { request } from 'undici';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { freePort } from '../support/redis-servers.js';
import { LEGACY_POST_HEADERS, initializeBody, initializeSession, startGateway, testPolicy } from './support/harness.js';
import { waitFor } from '../support/wait.js';

describe('instances and failures', () => {
  it('skips an instance that refuses connections and counts it', async () => {
    const live = await startExampleServer({ name: 'live' });
    const closedPort = await freePort();
    const dead = `http://127.0.0.1:${closedPort}${new URL(live.url).pathname}`;
    const gw = await startGateway(testPolicy([dead, live.url]));
    try {
      for (let i = 0; i < 4; i++) await initializeSession(gw.url);
      assert.equal(live.stats.requests.filter((r) => r.rpcMethod === 'initialize').length, 4);
      const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
      assert.match(metrics, /taskgate_upstream_errors_total\{upstream="tools",kind="refused"\} 1\b/);
    } finally {
      await gw.close();
      await live.close();
    }
  });

  it('answers 503 when the only instance refuses', async () => {
    const gw = await startGateway(testPolicy([`http://127.0.0.1:${await freePort()}/mcp`]));
    try {
      const res = await fetch(gw.url, { method: 'POST', headers: LEGACY_POST_HEADERS, body: initializeBody() });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '5');
      const body = (await res.json()) as { id: unknown; error: { code: number } };
      assert.equal(body.id, 1);
      assert.equal(body.error.code, -31005);
    } finally {
      await gw.close();
    }
  });

  it('answers 502 for a JSON reply over limits.maxResponseBytes and for one cut short, and stays up', async () => {
    // A raw backend: the example server cannot send a reply this wrong.
    const backend = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        const id = (JSON.parse(body) as { id: number }).id;
        if (id === 1) {
          const text = JSON.stringify({ jsonrpc: '2.0', id, result: { pad: 'x'.repeat(4096) } });
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
        } else if (id === 2) {
          // Promises 1000 bytes, sends 20, and hangs up.
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
          res.write('{"jsonrpc":"2.0","id"', () => res.socket?.destroy());
        } else {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: {} }));
        }
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    const port = (backend.address() as AddressInfo).port;
    const gw = await startGateway(testPolicy([`http://127.0.0.1:${port}/mcp`], { limits: { maxResponseBytes: '1KiB' } }));
    const call = async (id: number) => {
      const res = await fetch(gw.url, { method: 'POST', headers: LEGACY_POST_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' }) });
      return { status: res.status, body: (await res.json()) as { id: unknown; error?: { code: number; message: string } } };
    };
    try {
      const tooLarge = await call(1);
      assert.equal(tooLarge.status, 502);
      assert.equal(tooLarge.body.id, 1);
      assert.ok(tooLarge.body.error, 'a refusal, not the relayed reply');
      const cutShort = await call(2);
      assert.equal(cutShort.status, 502);
      assert.equal(cutShort.body.id, 2);
      const fine = await call(3);
      assert.equal(fine.status, 200);
      assert.deepEqual(fine.body, { jsonrpc: '2.0', id: 3, result: {} });
    } finally {
      await gw.close();
      await new Promise((resolve) => backend.close(resolve));
    }
  });

  describe('an upstream event stream that goes wrong', () => {
    const PROGRESS = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n';
    // A raw backend answering each POST with an event stream that fails in the way its id says.
    const closedAt = new Map<number, number>();
    const backend = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        const id = (JSON.parse(body) as { id: number }).id;
        res.once('close', () => closedAt.set(id, Date.now()));
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (id === 1) res.write(PROGRESS, () => setTimeout(() => res.socket?.destroy(), 20)); // then hangs up mid-stream
        if (id === 2) res.write(`event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${'x'.repeat(4096)}"}}\n\n`);
        if (id === 3) {
          const timer = setInterval(() => res.write(PROGRESS), 50); // until the request goes away
          res.once('close', () => clearInterval(timer));
        }
      });
    });
    const logs: string[] = [];
    let gw: Awaited<ReturnType<typeof startGateway>>;
    before(async () => {
      await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
      const port = (backend.address() as AddressInfo).port;
      const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (logs.push(String(chunk)), done()) }));
      gw = await startGateway(testPolicy([`http://127.0.0.1:${port}/mcp`], { limits: { maxSseEventBytes: '1KiB' } }), { logger });
    });
    after(async () => {
      await gw.close();
      await new Promise((resolve) => backend.close(resolve));
    });
    /**
     * Reads the reply until it ends or fails: the text, whether it failed, and whether it was
     * this reader that gave up after 10 s (a gateway that hangs is no reply cut short).
     */
    const read = async (id: number) => {
      const patience = AbortSignal.timeout(10_000);
      const res = await request(gw.url, { method: 'POST', headers: LEGACY_POST_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'x' } }), signal: patience });
      let text = '';
      try {
        for await (const chunk of res.body) text += (chunk as Buffer).toString('utf8');
        return { status: res.statusCode, text, failed: false, hung: false };
      } catch {
        return { status: res.statusCode, text, failed: true, hung: patience.aborted };
      }
    };

    it('one that hangs up mid-stream: the client gets what came, then the end of its reply, and a warning is logged', async () => {
      const got = await read(1);
      assert.equal(got.status, 200);
      assert.match(got.text, /notifications\/progress/);
      assert.ok(!got.hung, 'the gateway left the reply hanging instead of ending it');
      assert.ok(got.failed, 'the client must see the reply cut short, not a clean end');
      await waitFor(() => logs.some((line) => line.includes('upstream event stream ended with an error')), 'the warning', 5000);
    });

    it('one with an event over limits.maxSseEventBytes: refused with 502 (nothing was sent yet), the upstream request closed', async () => {
      const got = await read(2);
      assert.doesNotMatch(got.text, /xxxx/, 'the oversized event must not reach the client');
      assert.ok(!got.hung, 'the gateway left the reply hanging');
      assert.equal(got.status, 502, got.text);
      assert.equal((JSON.parse(got.text) as { id: unknown }).id, 2);
      await waitFor(() => closedAt.has(2), 'the second stream to close', 5000);
    });

    it('one the client leaves: the upstream request is closed too', async () => {
      const controller = new AbortController();
      const res = await request(gw.url, { method: 'POST', headers: LEGACY_POST_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'x' } }), signal: controller.signal });
      const events = res.body[Symbol.asyncIterator]();
      assert.match(String((await events.next()).value), /notifications\/progress/, 'the stream was flowing');
      const leftAt = Date.now();
      controller.abort();
      await events.next().catch(() => undefined);
      await waitFor(() => closedAt.has(3), 'the third stream to close', 5000);
      assert.ok(closedAt.get(3)! - leftAt < 2000, 'the backend stream outlived its client');
    });
  });

  it('cancels the upstream request when the client disconnects', async () => {
    const backend: ExampleServer = await startExampleServer({ enableJsonResponse: true });
    const gw = await startGateway(testPolicy([backend.url]));
    try {
      const sid = await initializeSession(gw.url);
      const controller = new AbortController();
      const pending = fetch(gw.url, {
        method: 'POST',
        headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': sid },
        body: JSON.stringify({ jsonrpc: '2.0', id: 50, method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 5 } } }),
        signal: controller.signal,
      });
      await waitFor(() => backend.stats.requests.some((r) => r.rpcMethod === 'tools/call'), 'the call to reach the backend', 5000);
      const abortedBefore = backend.stats.aborted;
      controller.abort();
      await assert.rejects(pending);
      await waitFor(() => backend.stats.aborted > abortedBefore, 'the backend to see the abort', 5000);
    } finally {
      await gw.close();
      await backend.close();
    }
  });
});

