/**
 * An event stream's status line and headers reach the client when the stream opens, not with
 * its first byte: a relayed standalone GET stream (2025-11-25) whose backend sends nothing, not
 * even keep-alives, and a stream the gateway answers itself (a 2025 tasks/result wait on a task
 * it runs). The backend writes its first byte only after the test has seen the headers.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { initializeSession, LEGACY_POST_HEADERS, startGateway, testPolicy, type GatewayUnderTest } from './support/harness.js';
import { readMessages, readMessagesUntil } from './support/reply-messages.js';
import { startHeldBackend, type HeldBackend } from './support/held-backend.js';

/** Bound on the headers' arrival: far more than they take, far less than a keep-alive interval (15 s). */
const HEADERS_BOUND_MS = 5000;

/** The response, once its headers have come; fails past the bound. */
async function headersOf(pending: Promise<Response>, what: string): Promise<Response> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no status line for ${what} within ${HEADERS_BOUND_MS} ms`)), HEADERS_BOUND_MS);
  });
  try {
    return await Promise.race([pending, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The first event's JSON-RPC message on `res`'s stream. */
async function firstMessage(res: Response): Promise<Record<string, unknown>> {
  const [first] = await readMessagesUntil(res, () => true);
  if (first === undefined) assert.fail('the stream ended without a message');
  return first;
}

describe('event streams answer with their headers at once', () => {
  let backend: HeldBackend;
  let gw: GatewayUnderTest;
  before(async () => {
    backend = await startHeldBackend();
    const origin = new URL(backend.url).origin;
    gw = await startGateway(
      testPolicy([backend.url], {
        upstreams: { tools: { instances: [origin], cooldown: '30s', bridge: 'off', providedTasks: { tools: ['hold'] } } },
        audit: { stdout: false },
      }),
    );
  });
  after(async () => {
    await gw?.close();
    await backend?.close();
  });

  it('relays a quiet standalone GET stream\'s status line before the backend sent a byte', async () => {
    const session = await initializeSession(gw.url);
    const stream = new AbortController();
    try {
      const res = await headersOf(
        fetch(gw.url, { signal: stream.signal, headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session } }),
        'the GET stream',
      );
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      // Only now does the backend say anything on the stream, and it comes through.
      await backend.notify('first byte');
      const message = await firstMessage(res);
      assert.equal(message.method, 'notifications/message');
      assert.equal((message.params as { data?: unknown }).data, 'first byte');
    } finally {
      stream.abort();
    }
  });

  it('sends the status line of its own tasks/result wait before the task has anything to say', async () => {
    const session = await initializeSession(gw.url);
    const headers = { ...LEGACY_POST_HEADERS, 'mcp-session-id': session };
    const created = await fetch(gw.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hold', arguments: {}, task: { ttl: 60_000 } } }),
    });
    const [createResult] = (await readMessages(created)) as Array<{ result: { task: { taskId: string } } }>;
    const taskId = createResult!.result.task.taskId;
    await backend.until(() => backend.running === 1, 'the task\'s call working');
    const wait = new AbortController();
    try {
      const res = await headersOf(
        fetch(gw.url, { method: 'POST', signal: wait.signal, headers, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } }) }),
        'the tasks/result wait',
      );
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      backend.release();
      const message = await firstMessage(res);
      assert.equal(message.id, 2);
      assert.match(JSON.stringify(message.result), /released/);
    } finally {
      wait.abort();
    }
  });
});
