/**
 * The tasks extension as taskgate follows it (ext-tasks e4345978; docs/architecture.md,
 * "Protocol revisions"), held against backends that send what the extension's later fixes
 * rule out: fractional ttlMs and pollIntervalMs, a failed task's error that is not a JSON-RPC
 * error object. Every object the client gets validates against that revision's schema and the
 * ext-tasks client's own. Also: resultType on every task-shaped result, the listen's completion
 * result when the gateway shuts down, integer TTLs on the 2025 side, and authentication on
 * every task request (authorization on each: tasks-ownership.test.ts and status-push.test.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { LEGACY_POST_HEADERS, startGateway, startStack, testPolicy, type GatewayUnderTest, type Stack } from './support/harness.js';
import { startMixedEraStack, type MixedEraStack } from './support/mixed-era-stack.js';
import { createModernTaskClient, PROTOCOL_VERSION, TASKS_EXTENSION, type ModernTaskClient } from './support/modern-client.js';
import { startNumberedTaskBackend, type NumberedTaskBackend } from './support/numbered-task-backend.js';
import { listen, taskIn } from './support/push-listener.js';
import { assertTaskObject } from './support/task-schemas.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

describe('2026-07-28 task objects from a careless backend, as ext-tasks e4345978 has them', () => {
  let backend: NumberedTaskBackend;
  let gw: GatewayUnderTest;
  let client: ModernTaskClient;
  before(async () => {
    backend = await startNumberedTaskBackend({ created: () => ({ ttlMs: 59_999.6, pollIntervalMs: 250.2 }) });
    gw = await startGateway(testPolicy([backend.url]));
    client = await createModernTaskClient(gw.url);
  });
  after(async () => {
    await client?.close();
    await gw?.close();
    await backend?.close();
  });

  const create = async () => {
    const exchange = await client.raw('tools/call', { name: 'job', arguments: {} });
    const result = exchange.response?.result;
    assertTaskObject('modern', 'creation', result);
    return { handle: String(result!.taskId), id: backend.ids.at(-1)!, result: result! };
  };
  const poll = async (handle: string) => {
    const result = (await client.raw('tasks/get', { taskId: handle })).response?.result;
    assertTaskObject('modern', 'get', result);
    return result!;
  };

  it('ttlMs and pollIntervalMs are whole milliseconds: lifetimes rounded down, intervals up', async () => {
    const { handle, id, result } = await create();
    assert.deepEqual([result.ttlMs, result.pollIntervalMs], [59_999, 251], 'the creation result');
    backend.set(id, { ttlMs: 59_999.9, pollIntervalMs: 300.5 });
    const polled = await poll(handle);
    assert.deepEqual([polled.ttlMs, polled.pollIntervalMs], [59_999, 301], 'a forwarded poll');
    const listener = await listen(gw.url, '', { taskIds: [handle] });
    try {
      const pushed = await listener.waitFor(taskIn(handle, 'working'), 8000, 'a notification');
      assertTaskObject('modern', 'notification', pushed);
      assert.deepEqual([pushed.params?.ttlMs, pushed.params?.pollIntervalMs], [59_999, 301], 'notifications/tasks');
    } finally {
      listener.close();
    }
  });

  it('a failed task\'s error is a JSON-RPC error object, whatever the backend sent', async () => {
    const cases: [sent: unknown, shown: Record<string, unknown>][] = [
      ['disk full', { code: -32603, message: 'disk full' }],
      [{ message: 'no code' }, { code: -32603, message: 'no code' }],
      [{ code: 'E42', message: 'a string code', data: { retry: false } }, { code: -32603, message: 'a string code', data: { retry: false } }],
      [undefined, { code: -32603, message: 'The task failed; the backend gave no error' }],
      [{ code: -32001, message: 'kept as it was', data: [1] }, { code: -32001, message: 'kept as it was', data: [1] }],
    ];
    for (const [sent, shown] of cases) {
      const { handle, id } = await create();
      backend.set(id, { status: 'failed', error: sent });
      assert.deepEqual((await poll(handle)).error, shown, JSON.stringify(sent) ?? 'no error');
    }
    // And on a listen: the notification is the DetailedTask tasks/get would give.
    const { handle, id } = await create();
    backend.set(id, { status: 'failed', error: 'out of memory' });
    const listener = await listen(gw.url, '', { taskIds: [handle] });
    try {
      const pushed = await listener.waitFor(taskIn(handle, 'failed'), 8000, 'the failed notification');
      assertTaskObject('modern', 'notification', pushed);
      assert.deepEqual(pushed.params?.error, { code: -32603, message: 'out of memory' });
    } finally {
      listener.close();
    }
  });

  it('resultType on every task-shaped result: task, complete on tasks/get (and inline), update and cancel', async () => {
    const { handle, result } = await create();
    assert.equal(result.resultType, 'task');
    assert.equal((await poll(handle)).resultType, 'complete');
    const update = await client.raw('tasks/update', { taskId: handle, inputResponses: {} });
    assert.equal(update.response?.result?.resultType, 'complete');
    const cancel = await client.raw('tasks/cancel', { taskId: handle });
    assertTaskObject('modern', 'cancel', cancel.response?.result);
    const done = await create();
    backend.set(done.id, { status: 'completed', result: { content: [{ type: 'text', text: 'ok' }] } });
    const completed = await poll(done.handle);
    assert.equal((completed.result as Record<string, unknown>).resultType, 'complete', 'the inline result');
  });
});

describe('the listen\'s completion result when the gateway shuts down', () => {
  let backend: NumberedTaskBackend;
  before(async () => {
    backend = await startNumberedTaskBackend();
  });
  after(async () => {
    await backend?.close();
  });

  it('ends the subscription with its SubscriptionsListenResult, not a cut connection', async () => {
    const gw = await startGateway(testPolicy([backend.url]));
    const client = await createModernTaskClient(gw.url);
    let closed = false;
    try {
      const handle = String((await client.raw('tools/call', { name: 'job', arguments: {} })).response?.result?.taskId);
      const listener = await listen(gw.url, '', { taskIds: [handle] }, { id: 'listen-shutdown' });
      await listener.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
      await client.close();
      closed = true;
      await gw.close();
      await listener.ended;
      assert.deepEqual(listener.messages.at(-1), { jsonrpc: '2.0', id: 'listen-shutdown', result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 'listen-shutdown' } } });
    } finally {
      if (!closed) {
        await client.close();
        await gw.close();
      }
    }
  });
});

describe('2025-11-25 lifetimes are whole milliseconds too', () => {
  let stack: Stack;
  let client: Client;
  before(async () => {
    stack = await startStack();
    client = new Client({ name: 'integers', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.gw.url)));
  });
  after(async () => {
    await client?.close();
    await stack?.close();
  });

  it('a client\'s fractional ttl reaches the backend, and comes back, rounded down', async () => {
    const created = await client.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 90_000.75 } } }, CreateTaskResultSchema);
    const call = stack.servers[0]!.stats.requests.find((r) => r.rpcMethod === 'tools/call');
    assert.equal((call?.body as { params: { task: { ttl: number } } }).params.task.ttl, 90_000, 'what the backend was asked');
    assert.equal(created.task.ttl, 90_000);
    assertTaskObject('legacy', 'creation', { task: created.task });
    await client.experimental.tasks.cancelTask(created.task.taskId);
  });
});

describe('authentication on every task request, both generations', () => {
  let stack: MixedEraStack;
  before(async () => {
    stack = await startMixedEraStack({ store: 'memory' });
  });
  after(async () => {
    await stack?.close();
  });

  const modernMeta = { 'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION, 'io.modelcontextprotocol/clientInfo': { name: 'anon', version: '0' }, 'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } } };
  const requests: [era: 'legacy' | 'modern', method: string, params: Record<string, unknown>][] = [
    ['legacy', 'tasks/get', { taskId: 'x' }],
    ['legacy', 'tasks/result', { taskId: 'x' }],
    ['legacy', 'tasks/cancel', { taskId: 'x' }],
    ['legacy', 'tasks/list', {}],
    ['modern', 'tasks/get', { taskId: 'x' }],
    ['modern', 'tasks/update', { taskId: 'x', inputResponses: {} }],
    ['modern', 'tasks/cancel', { taskId: 'x' }],
    ['modern', 'subscriptions/listen', { notifications: { taskIds: ['x'] } }],
  ];

  it('no token or a bad one: 401 with WWW-Authenticate, and nothing reaches a backend', async () => {
    stack.legacy.stats.reset();
    stack.modern.stats.reset();
    for (const [era, method, params] of requests) {
      const headers: Record<string, string> =
        era === 'legacy'
          ? { ...LEGACY_POST_HEADERS }
          : { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL_VERSION, 'mcp-method': method, ...(typeof params.taskId === 'string' ? { 'mcp-name': params.taskId } : {}) };
      for (const authorization of [undefined, 'Bearer not-a-token']) {
        const res = await fetch(era === 'legacy' ? stack.legacyUrl : stack.modernUrl, {
          method: 'POST',
          headers: authorization ? { ...headers, authorization } : headers,
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: era === 'modern' ? { ...params, _meta: modernMeta } : params }),
        });
        await res.text();
        assert.equal(res.status, 401, `${era} ${method} with ${authorization ?? 'no token'}`);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer /);
      }
    }
    assert.deepEqual([...stack.legacy.stats.requests, ...stack.modern.stats.requests], []);
  });
});
