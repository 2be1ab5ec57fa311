/**
 * Clients that hold connections at their own pace: headers sent a byte at a time (slowloris),
 * a keep-alive connection left idle, more connections than the cap. Each is dropped within
 * its limit (limits.headersTimeout, limits.keepAliveTimeout, limits.maxConnections) while
 * honest clients keep being served. Raw sockets, because no HTTP client would be this slow.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { initializeBody, LEGACY_POST_HEADERS, metricSample, startStack, type Stack } from './support/harness.js';
import { connectRaw, parseResponse, type RawConnection } from './support/raw-socket.js';
import { waitFor } from '../support/wait.js';

const HEADERS_TIMEOUT_MS = 2000;
const KEEP_ALIVE_MS = 1000;
/** What a loaded two-core runner may add to a deadline: the check interval and then some. */
const SLACK_MS = 4000;

/** Sends a request head one byte every `everyMs` until the socket closes; never finishes it. */
function dripHeaders(connection: RawConnection, url: string, everyMs: number): void {
  const target = new URL(url);
  const head = `POST ${target.pathname} HTTP/1.1\r\nhost: ${target.host}\r\ncontent-type: application/json\r\nx-padding: ${'a'.repeat(10_000)}`;
  let at = 0;
  let open = true;
  void connection.closed.then(() => (open = false));
  void (async () => {
    while (open && at < head.length) {
      await connection.write(head[at++]!).catch(() => undefined);
      await sleep(everyMs);
    }
  })();
}

describe('slow clients are dropped within the limits; honest ones are served meanwhile', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ policy: { limits: { headersTimeout: `${HEADERS_TIMEOUT_MS}ms`, keepAliveTimeout: `${KEEP_ALIVE_MS}ms`, maxConnections: 40 } } });
  });
  after(() => stack.close());

  const honestRequest = async (): Promise<number> => {
    const res = await request(stack.gw.url, { method: 'POST', headers: { ...LEGACY_POST_HEADERS }, body: initializeBody() });
    await res.body.text();
    return res.statusCode;
  };

  it('slowloris: headers a byte at a time are cut off at limits.headersTimeout with a 408, while honest requests keep succeeding', async () => {
    const started = Date.now();
    const slow = await Promise.all(Array.from({ length: 20 }, () => connectRaw(stack.gw.url)));
    for (const connection of slow) dripHeaders(connection, stack.gw.url, 200);
    const statuses: number[] = [];
    while (Date.now() - started < HEADERS_TIMEOUT_MS + 1000) {
      statuses.push(await honestRequest());
      await sleep(100);
    }
    const closes = await Promise.race([Promise.all(slow.map((c) => c.closed)), sleep(HEADERS_TIMEOUT_MS + SLACK_MS).then(() => undefined)]);
    assert.ok(closes, `slow connections still open ${HEADERS_TIMEOUT_MS + SLACK_MS} ms after they started`);
    for (const closed of closes) assert.ok(closed.at - started >= HEADERS_TIMEOUT_MS - 100, `dropped after ${closed.at - started} ms, before the timeout`);
    for (const connection of slow) assert.equal(parseResponse(connection.received()).status, 408);
    assert.ok(statuses.length >= 10, `only ${statuses.length} honest requests`);
    assert.deepEqual(new Set(statuses), new Set([200]), 'every honest request was served');
  });

  it('a client that sends nothing at all is dropped at limits.headersTimeout too', async () => {
    const started = Date.now();
    const silent = await connectRaw(stack.gw.url);
    const closed = await Promise.race([silent.closed, sleep(HEADERS_TIMEOUT_MS + SLACK_MS).then(() => undefined)]);
    assert.ok(closed, 'a silent connection was still open');
    assert.ok(closed.at - started >= HEADERS_TIMEOUT_MS - 100, `dropped after ${closed.at - started} ms`);
  });

  it('an idle keep-alive connection is closed after limits.keepAliveTimeout', async () => {
    const connection = await connectRaw(stack.gw.url);
    const target = new URL(stack.gw.url);
    const body = initializeBody();
    await connection.write(
      `POST ${target.pathname} HTTP/1.1\r\nhost: ${target.host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await waitFor(() => /\r\n\r\n/.test(connection.received()), 'the answer\'s head', 10_000, 10);
    const answeredAt = Date.now();
    assert.equal(parseResponse(connection.received()).headers.connection, 'keep-alive');
    const closed = await Promise.race([connection.closed, sleep(KEEP_ALIVE_MS + SLACK_MS).then(() => undefined)]);
    assert.ok(closed, 'the idle connection was still open');
    assert.ok(closed.at - answeredAt >= KEEP_ALIVE_MS - 100, `closed after ${closed.at - answeredAt} ms idle`);
  });

  it('past limits.maxConnections new connections are closed at once, and honest clients get in again once the slow ones are dropped', async () => {
    const started = Date.now();
    const hogs = await Promise.all(Array.from({ length: 40 }, () => connectRaw(stack.gw.url)));
    for (const connection of hogs) dripHeaders(connection, stack.gw.url, 200);
    await sleep(200);
    const extra = await connectRaw(stack.gw.url);
    const refused = await Promise.race([extra.closed, sleep(2000).then(() => undefined)]);
    assert.ok(refused, 'a connection beyond the cap was kept open');
    assert.ok(refused.at - started < HEADERS_TIMEOUT_MS, 'closed at once, not by the headers timeout');
    // Counted for the operator (alert TaskgateConnectionsDropped), from the admin listener.
    assert.ok((await metricSample(stack.gw.adminUrl, 'taskgate_connections_dropped_total'))! >= 1, 'the refused connection was not counted');
    await Promise.all(hogs.map((c) => c.closed));
    assert.equal(await honestRequest(), 200);
  });
});
