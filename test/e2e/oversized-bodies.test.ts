/**
 * A body the gateway refuses while the client is still sending it (over limits.maxBodyBytes,
 * or refused before it was read at all) gets an answer the client can read: the gateway
 * answers, reads and throws away what is still in flight, and only then closes, cleanly
 * (a lingering close, bounded in time and bytes). The client here is the least forgiving
 * kind: it sends the whole body before it reads a byte of the answer.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LINGER_MS } from '../../src/pipeline/lingering-close.js';
import { startStack, type Stack } from './support/harness.js';
import { connectRaw, parseResponse, postHead } from './support/raw-socket.js';

const MB = 1_000_000;
const CHUNK = Buffer.alloc(64 * 1024, 0x20);
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

/** Sends head and `size` bytes of body (content-length or chunked), awaiting each write, then reads to the close. */
async function sendWholeThenRead(url: string, size: number, framing: 'content-length' | 'chunked', headers: Record<string, string> = {}) {
  const connection = await connectRaw(url, { read: false });
  const framingHeader: Record<string, string> = framing === 'chunked' ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(size) };
  await connection.write(postHead(url, { ...JSON_HEADERS, ...framingHeader, ...headers }));
  for (let sent = 0; sent < size; sent += CHUNK.length) {
    const piece = CHUNK.subarray(0, Math.min(CHUNK.length, size - sent));
    // A write that fails here (EPIPE, ECONNRESET) fails the test: the gateway cut the client off.
    await connection.write(framing === 'chunked' ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece);
  }
  if (framing === 'chunked') await connection.write('0\r\n\r\n');
  connection.startReading();
  connection.socket.resume();
  const closed = await connection.closed;
  return { closed, response: parseResponse(connection.received()) };
}

describe('refused bodies: an answer the client can read, then a clean close', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ policy: { limits: { maxBodyBytes: '64KiB' } } });
  });
  after(() => stack.close());

  for (const size of [5 * MB, 50 * MB]) {
    for (const framing of ['content-length', 'chunked'] as const) {
      it(`${size / MB} MB, ${framing}: 413 with the JSON-RPC error, read after the whole body was sent`, async () => {
        stack.servers[0]!.stats.reset();
        const { closed, response } = await sendWholeThenRead(stack.gw.url, size, framing);
        assert.equal(closed.error, undefined, 'the connection ended without a reset');
        assert.equal(response.status, 413);
        assert.equal(response.headers.connection, 'close');
        assert.deepEqual(JSON.parse(response.body), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: the body exceeds the size limit' } });
        assert.deepEqual(stack.servers[0]!.stats.requests, []);
      });
    }
  }

  it('a refusal before the body is read at all (a Host not allowed) lingers the same way', async () => {
    const { closed, response } = await sendWholeThenRead(stack.gw.url, 5 * MB, 'content-length', { host: 'evil.example' });
    assert.equal(closed.error, undefined);
    assert.equal(response.status, 403);
    assert.equal((JSON.parse(response.body) as { error: { code: number } }).error.code, -32600);
  });

  const refusals: { status: number; headers: Record<string, string> }[] = [{ status: 413, headers: {} }, { status: 403, headers: { host: 'evil.example' } }];
  for (const refusal of refusals) {
    it(`a client that never stops sending reads its ${refusal.status} and is cut off after the linger bound`, async () => {
      const connection = await connectRaw(stack.gw.url);
      await connection.write(postHead(stack.gw.url, { ...JSON_HEADERS, 'content-length': String(1024 * MB), ...refusal.headers }));
      const started = Date.now();
      let writing = true;
      void connection.closed.then(() => (writing = false));
      while (writing && Date.now() - started < LINGER_MS + 20_000) {
        await connection.write(CHUNK).catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const closed = await connection.closed;
      // Generous: the bound is LINGER_MS; a loaded runner may be late by seconds, not by ten.
      assert.ok(closed.at - started < LINGER_MS + 10_000, `still open after ${closed.at - started} ms`);
      assert.ok(closed.at - started >= LINGER_MS - 500, `closed after ${closed.at - started} ms, before the linger bound`);
      assert.equal(parseResponse(connection.received()).status, refusal.status, 'the answer arrived before the cut');
    });
  }
});
