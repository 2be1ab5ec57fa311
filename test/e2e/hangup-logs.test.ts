/**
 * A client that hangs up mid-stream is an info line in the gateway's log, never an error, and
 * nothing runs for it afterwards (docs/security.md, "Client hang-ups"): a stream the gateway
 * answers itself (a 2025 tasks/result wait on a task it runs) and relayed event streams (a
 * standalone GET stream, a tools/call answered on a stream). The gateway's own log is read.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { initializeSession, LEGACY_POST_HEADERS, startGateway, testPolicy, type GatewayUnderTest } from './support/harness.js';
import { readMessages } from './support/reply-messages.js';
import { startHeldBackend, type HeldBackend } from './support/held-backend.js';
import { waitFor } from '../support/wait.js';

type LogLine = Record<string, unknown> & { level: number; msg: string; reqId?: string };

function captureLog(): { stream: Writable; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { stream, lines };
}

describe('a client hang-up mid-stream', () => {
  let backend: HeldBackend;
  let gw: GatewayUnderTest;
  let session: string;
  const log = captureLog();
  const post = (body: unknown, init: { signal?: AbortSignal; requestId?: string } = {}) =>
    fetch(gw.url, {
      method: 'POST',
      signal: init.signal,
      headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': session, ...(init.requestId ? { 'x-request-id': init.requestId } : {}) },
      body: JSON.stringify(body),
    });

  before(async () => {
    backend = await startHeldBackend();
    const origin = new URL(backend.url).origin;
    const policy = testPolicy([backend.url], {
      upstreams: { tools: { instances: [origin], cooldown: '30s', providedTasks: { tools: ['hold'] } } },
      audit: { stdout: false },
    });
    gw = await startGateway(policy, { logger: pino({ level: 'info' }, log.stream) });
    session = await initializeSession(gw.url);
  });
  after(async () => {
    backend?.release();
    await gw?.close();
    await backend?.close();
  });

  /**
   * Opens a stream as request `requestId`, hangs up once its headers came (or after a second
   * without them: a gateway that sends none before the first byte; or once `ready`), then
   * waits for the log line of the hang-up, or any error of that request, and for a later
   * request to reach the backend (whatever the hung-up request set off has happened by then).
   */
  async function hangUp(open: (signal: AbortSignal, requestId: string) => Promise<Response>, ready?: () => Promise<void>): Promise<LogLine[]> {
    const requestId = randomUUID();
    const client = new AbortController();
    const opened = open(client.signal, requestId).catch(() => undefined);
    await (ready ? ready() : Promise.race([opened, sleep(1000)]));
    client.abort();
    await opened;
    const ofRequest = () => log.lines.filter((line) => line.reqId === requestId);
    await waitFor(() => ofRequest().some((line) => line.msg === 'client hung up' || line.level >= 50), () => `a log line for the hang-up of ${requestId}: ${JSON.stringify(ofRequest())}`, 5000, 10);
    const pings = backend.received.filter((m) => m === 'ping').length;
    const pong = await post({ jsonrpc: '2.0', id: randomUUID(), method: 'ping' });
    assert.equal(pong.status, 200);
    await pong.text();
    assert.equal(backend.received.filter((m) => m === 'ping').length, pings + 1);
    return ofRequest();
  }

  function assertInfoOnly(lines: LogLine[]): void {
    const errors = log.lines.filter((line) => line.level >= 50);
    assert.deepEqual(errors, [], 'no error-level line');
    assert.deepEqual(lines.filter((line) => line.level >= 40), [], 'no warning for the hung-up request');
    const hungUp = lines.filter((line) => line.msg === 'client hung up');
    assert.equal(hungUp.length, 1, 'one line says the client hung up');
    assert.equal(hungUp[0]!.level, 30, 'at info');
  }

  it('on a tasks/result wait the gateway answers itself: an info line, and nothing goes upstream', async () => {
    const created = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hold', arguments: {}, task: { ttl: 60_000 } } });
    const [createResult] = (await readMessages(created)) as Array<{ result: { task: { taskId: string } } }>;
    const taskId = createResult!.result.task.taskId;
    await backend.until(() => backend.running === 1, 'the task\'s call working');
    const lines = await hangUp((signal, requestId) => post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } }, { signal, requestId }));
    assertInfoOnly(lines);
    assert.equal(lines.find((line) => line.msg === 'client hung up')!.rpcMethod, 'tasks/result');
    assert.ok(!backend.received.includes('tasks/result'), 'the locally answered request never reached the backend');
    backend.release();
    await backend.until(() => backend.running === 0, 'the task\'s call ending');
  });

  it('on a relayed standalone GET stream: an info line', async () => {
    const lines = await hangUp((signal, requestId) =>
      fetch(gw.url, { signal, headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session, 'x-request-id': requestId } }),
    );
    assertInfoOnly(lines);
  });

  it('on a tools/call answered on a relayed event stream: an info line', async () => {
    // The call says something first: its stream is flowing when the client hangs up.
    const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'hold', arguments: { say: 'working' } } };
    const lines = await hangUp((signal, requestId) => post(call, { signal, requestId }));
    assertInfoOnly(lines);
    backend.release();
  });

  it('on a tools/call whose relayed event stream has not said anything yet: an info line', async () => {
    const answering = backend.callsAnswering;
    const call = { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'hold', arguments: {} } };
    // The backend has sent the stream's headers and nothing else; the gateway holds a POST's
    // headers for its first event (relay-response.ts), so the client has none when it leaves.
    const lines = await hangUp(
      (signal, requestId) => post(call, { signal, requestId }),
      () => backend.until(() => backend.callsAnswering > answering && backend.running === 1, 'the call\'s stream open'),
    );
    assertInfoOnly(lines);
    backend.release();
  });
});
