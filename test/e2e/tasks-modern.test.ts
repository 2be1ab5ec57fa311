/**
 * Task takeover, 2026-07-28 generation: the ext-tasks client and a task backend on the SDK 2.x
 * server, JWT principals, the gateway owning every task id the client sees.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { JsonRpcResponseError } from '@modelcontextprotocol/ext-tasks/client';
import { isHandleShaped } from '../../src/tasks/handle.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { waitForModernStatus } from './support/task-waits.js';
import { listen, taskIn } from './support/push-listener.js';

async function startTask(client: ModernTaskClient, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const execution = await client.callTool(name, args);
  assert.equal(execution.kind, 'task', `${name} did not create a task`);
  await execution.detach();
  return execution.handle.taskId;
}

const textOf = (value: unknown): string | undefined => ((value as { content?: Array<{ text?: string }> })?.content ?? [])[0]?.text;
const isRpcError = (code: number) => (e: unknown) => e instanceof JsonRpcResponseError && e.code === code;

describe('2026-07-28 task takeover through the gateway', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  before(async () => {
    stack = await startTaskStack({ era: 'modern', tasks: { ttl: { max: '2m' } } });
    alice = await modernClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('creates with a handle, polls to completion, and inlines the result with resultType', async () => {
    const execution = await alice.callTool('slow_scan', { seconds: 0.3 });
    assert.equal(execution.kind, 'task');
    const created = alice.lastExchange().response?.result ?? {};
    assert.equal(created.resultType, 'task');
    assert.ok(isHandleShaped(created.taskId), String(created.taskId));
    assert.equal(created.ttlMs, 120_000, 'the backend\'s 10 minutes are capped to the policy\'s 2');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed');
    const last = alice.lastExchange().response?.result ?? {};
    assert.equal(last.taskId, created.taskId);
    assert.equal(last.resultType, 'complete');
    assert.equal((last.result as Record<string, unknown>).resultType, 'complete');
    const polled = stack.backends[0]!.stats.requests.filter((r) => r.rpcMethod === 'tasks/get');
    assert.ok(polled.length >= 1);
    for (const r of polled) {
      assert.notEqual(r.headers['mcp-name'], created.taskId, 'the backend saw the handle in Mcp-Name');
      assert.equal(r.headers['mcp-name'], (r.body as { params: { taskId: string } }).params.taskId, 'header and body agree upstream');
    }
  });

  it('reports a failed task with its error, and a tool error as completed', async () => {
    const failed = await startTask(alice, 'fail_task');
    assert.equal((await waitForModernStatus(alice, failed, 'failed')).raw.error !== undefined, true);
    const toolError = await startTask(alice, 'tool_error');
    const view = await waitForModernStatus(alice, toolError, 'completed');
    assert.equal((view.raw.result as { isError?: boolean }).isError, true);
  });

  it('routes tasks/update to the task: input_required answered, then completed', async () => {
    const taskId = await startTask(alice, 'ask_name');
    const parked = await waitForModernStatus(alice, taskId, 'input_required');
    const [key] = Object.keys(parked.raw.inputRequests as object);
    await alice.updateTask(taskId, { [key!]: { action: 'accept', content: { name: 'Ada' } } });
    assert.equal(alice.lastExchange().response?.result?.resultType, 'complete');
    const done = await waitForModernStatus(alice, taskId, 'completed');
    assert.equal(textOf(done.raw.result), 'Hello, Ada');
  });

  it('acks cancel, and acks it again once terminal', async () => {
    const taskId = await startTask(alice, 'slow_scan', { seconds: 30 });
    await alice.cancelTask(taskId);
    const first = alice.lastExchange();
    await waitForModernStatus(alice, taskId, 'cancelled');
    await alice.cancelTask(taskId);
    assert.equal(first.status, 200);
    assert.deepEqual(alice.lastExchange().response?.result, first.response?.result);
  });

  it('answers tasks/result and tasks/list itself with 404 -32601', async () => {
    const taskId = await startTask(alice, 'slow_scan', { seconds: 0.1 });
    for (const method of ['tasks/result', 'tasks/list']) {
      stack.backends[0]!.stats.reset();
      const exchange = await alice.raw(method, method === 'tasks/result' ? { taskId } : {});
      assert.equal(exchange.status, 404);
      assert.equal(exchange.response?.error?.code, -32601);
      assert.equal(stack.backends[0]!.stats.requests.length, 0);
    }
  });

  it('refuses tasks/* from a request that did not declare the extension: 400 -32021', async () => {
    const taskId = await startTask(alice, 'slow_scan', { seconds: 0.1 });
    const exchange = await alice.raw('tasks/get', { taskId }, { envelope: 'plain' });
    assert.equal(exchange.status, 400);
    assert.equal(exchange.response?.error?.code, -32021);
    assert.deepEqual(exchange.response?.error?.data, { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
  });

  it('holds Mcp-Name to the handle: 400 -32020 on a mismatch', async () => {
    const taskId = await startTask(alice, 'slow_scan', { seconds: 0.1 });
    const exchange = await alice.raw('tasks/get', { taskId }, { headers: { 'mcp-name': 'someone-else' } });
    assert.equal(exchange.status, 400);
    assert.equal(exchange.response?.error?.code, -32020);
  });

  it('gives a non-declaring tools/call a plain result, never a task', async () => {
    const exchange = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 0.05 } }, { envelope: 'plain' });
    assert.equal(exchange.status, 200);
    assert.notEqual(exchange.response?.result?.resultType, 'task');
  });

  it('answers a listen naming task handles itself, and opens the rest of the filter on the backend', async () => {
    const taskId = await startTask(alice, 'slow_scan', { seconds: 0.3 });
    stack.backends[0]!.stats.reset();
    const listener = await listen(stack.gw.url, await stack.bearer('alice'), { taskIds: [taskId], toolsListChanged: true });
    try {
      const ack = await listener.waitFor(() => true);
      assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
      assert.deepEqual((ack.params?.notifications as { taskIds?: unknown }).taskIds, [taskId], 'the handle, never the backend id');
      const seen = stack.backends[0]!.stats.requests.find((r) => r.rpcMethod === 'subscriptions/listen');
      assert.ok(seen, 'the rest of the filter went to the backend');
      assert.deepEqual((seen.body as { params: { notifications: Record<string, unknown> } }).params.notifications, { toolsListChanged: true });
      await listener.waitFor(taskIn(taskId, 'completed'));
      assert.equal(listener.messages.some((m) => 'result' in m), false, 'the stream stays open while the backend listen does');
    } finally {
      listener.close();
    }
  });

  it('keeps a second principal out, identically to an unknown task', async () => {
    const taskId = await startTask(alice, 'slow_scan', { seconds: 5 });
    const mallory = await modernClient(stack, 'mallory');
    try {
      await assert.rejects(mallory.getTask(taskId), isRpcError(-32602));
      await assert.rejects(mallory.cancelTask(taskId), isRpcError(-32602));
      assert.equal((await alice.getTask(taskId)).status, 'working', 'the owner is unaffected');
    } finally {
      await mallory.close();
    }
  });
});
