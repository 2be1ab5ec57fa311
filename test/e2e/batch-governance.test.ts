/**
 * JSON-RPC batches (issue #24, item 1). A POST without MCP-Protocol-Version is taken as
 * 2025-03-26, the one revision with batches, and the stages after parsing read one message per
 * body. So a batch that holds any message a stage governs is refused whole, before any backend
 * sees it; a batch of plain messages still passes. Here a hostile principal batches the very
 * messages that once walked past every check: another principal's task by its real backend id
 * (tasks/result, tasks/cancel), tools/call past the tool limits, a listen, a response.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { initializeBody } from './support/harness.js';
import { readMessages } from './support/reply-messages.js';
import { startTaskStack, type TaskStack } from './support/task-harness.js';

// No MCP-Protocol-Version: what a client that means 2025-03-26 sends.
const BATCH_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } as const;

async function openSession(stack: TaskStack, subject: string): Promise<{ authorization: string; sessionId: string }> {
  const authorization = await stack.bearer(subject);
  const res = await fetch(stack.gw.url, { method: 'POST', headers: { ...BATCH_HEADERS, 'mcp-protocol-version': '2025-11-25', authorization }, body: initializeBody() });
  assert.equal(res.status, 200);
  const sessionId = res.headers.get('mcp-session-id')!;
  await res.text();
  const initialized = await fetch(stack.gw.url, {
    method: 'POST',
    headers: { ...BATCH_HEADERS, 'mcp-protocol-version': '2025-11-25', authorization, 'mcp-session-id': sessionId },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  assert.equal(initialized.status, 202);
  return { authorization, sessionId };
}

describe('a JSON-RPC batch passes every check a single message passes, or is refused whole', () => {
  let stack: TaskStack;
  let mallory: { authorization: string; sessionId: string };
  let victimHandle: string;
  let victimBackendId: string;

  before(async () => {
    stack = await startTaskStack({
      era: 'legacy',
      policy: { toolLimits: { tools: { slow_scan: { concurrency: 1 } } } },
      tasks: { tools: { slow_scan: { maxTtl: '60s' } } },
    });
    const alice = await openSession(stack, 'alice');
    const created = await fetch(stack.gw.url, {
      method: 'POST',
      headers: { ...BATCH_HEADERS, 'mcp-protocol-version': '2025-11-25', authorization: alice.authorization, 'mcp-session-id': alice.sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 60_000 } } }),
    });
    const [answer] = (await readMessages(created)) as Array<{ result: { task: { taskId: string } } }>;
    victimHandle = answer!.result.task.taskId;
    // What a prober on a backend that numbers its tasks would guess: the real backend id.
    victimBackendId = (await stack.gw.gateway.store.getTask(victimHandle))!.upstreamTaskId;
    mallory = await openSession(stack, 'mallory');
  });
  after(() => stack?.close());

  const sendBatch = async (messages: unknown[]) => {
    const res = await request(stack.gw.url, {
      method: 'POST',
      headers: { ...BATCH_HEADERS, authorization: mallory.authorization, 'mcp-session-id': mallory.sessionId },
      body: JSON.stringify(messages),
    });
    return { status: res.statusCode, body: await res.body.text(), contentType: String(res.headers['content-type']) };
  };
  const ping = { jsonrpc: '2.0', id: 'p', method: 'ping' };

  const governed: Array<[string, Record<string, unknown>]> = [
    ['tasks/result of another principal, by backend id', { jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId: '$backend' } }],
    ['tasks/cancel of another principal, by backend id', { jsonrpc: '2.0', id: 3, method: 'tasks/cancel', params: { taskId: '$backend' } }],
    ['tasks/get of another principal, by handle', { jsonrpc: '2.0', id: 4, method: 'tasks/get', params: { taskId: '$handle' } }],
    ['tasks/list', { jsonrpc: '2.0', id: 5, method: 'tasks/list' }],
    ['tasks/update', { jsonrpc: '2.0', id: 6, method: 'tasks/update', params: { taskId: '$backend', inputResponses: {} } }],
    ['an unknown tasks/* method', { jsonrpc: '2.0', id: 7, method: 'tasks/whatever', params: { taskId: '$backend' } }],
    ['tools/call past the tool limits and the TTL cap', { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 1 }, task: { ttl: 86_400_000 } } }],
    ['subscriptions/listen', { jsonrpc: '2.0', id: 9, method: 'subscriptions/listen', params: { notifications: { taskIds: ['$backend'] } } }],
    ['tools/list (its answer advertises tasks)', { jsonrpc: '2.0', id: 10, method: 'tools/list' }],
    ['server/discover', { jsonrpc: '2.0', id: 11, method: 'server/discover' }],
    ['a response to a relayed server request', { jsonrpc: '2.0', id: 'tg-1', result: { action: 'decline' } }],
  ];

  for (const [name, template] of governed) {
    it(`refuses a batch holding ${name}, before any backend sees it`, async () => {
      const message = JSON.parse(JSON.stringify(template).replaceAll('$backend', victimBackendId).replaceAll('$handle', victimHandle)) as unknown;
      for (const backend of stack.backends) backend.stats.reset();
      const answer = await sendBatch([ping, message, { ...ping, id: 'q' }]);
      assert.equal(answer.status, 400, answer.body);
      const error = JSON.parse(answer.body) as { id: unknown; error: { code: number; message: string } };
      assert.equal(error.id, null);
      assert.equal(error.error.code, -32600);
      assert.match(error.error.message, /must be sent on its own/);
      assert.deepEqual(stack.backends[0]!.stats.requests, [], 'the backend saw the batch');
    });
  }

  it('forwards a batch of messages no stage governs, and relays every answer', async () => {
    for (const backend of stack.backends) backend.stats.reset();
    const answer = await sendBatch([ping, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, { ...ping, id: 'q' }]);
    assert.equal(answer.status, 200, answer.body);
    const text = answer.contentType.includes('event-stream')
      ? answer.body.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n')
      : answer.body;
    for (const id of ['p', 'q']) assert.match(text, new RegExp(`"id":"${id}","result":\\{\\}|"result":\\{\\},"jsonrpc":"2.0","id":"${id}"`));
    assert.equal(stack.backends[0]!.stats.requests.length, 1);
  });
});
