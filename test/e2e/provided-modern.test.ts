/**
 * Tasks the gateway runs itself, 2026-07-28: the SDK 2.x server with no task runtime (no
 * extension, no tasks/* handlers; MRTR for input), the real ext-tasks client.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { JsonRpcResponseError } from '@modelcontextprotocol/ext-tasks/client';
import { isHandleShaped } from '../../src/tasks/handle.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { waitForModernStatus } from './support/task-waits.js';
import { waitFor } from '../support/wait.js';

const textOf = (value: unknown): string | undefined => ((value as { content?: Array<{ text?: string }> })?.content ?? [])[0]?.text;

describe('2026-07-28 tasks the gateway runs for a server that has none', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  before(async () => {
    stack = await startTaskStack({
      era: 'modern',
      plain: true,
      providedTasks: { tools: 'all', promoteAfter: '400ms' },
      tasks: { poll: { default: '100ms' } },
      workMs: 1500,
    });
    alice = await modernClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('declares the tasks extension in server/discover', async () => {
    const discover = await alice.raw('server/discover', {});
    const extensions = (discover.response?.result?.capabilities as { extensions?: Record<string, unknown> }).extensions;
    assert.deepEqual(extensions?.['io.modelcontextprotocol/tasks'], {});
  });

  it('answers a fast call as a plain result, and a slow one as a task that completes', async () => {
    const fast = await alice.raw('tools/call', { name: 'quick_echo', arguments: { text: 'hi' } });
    assert.equal(fast.status, 200);
    assert.equal(textOf(fast.response?.result), 'hi');
    assert.notEqual(fast.response?.result?.resultType, 'task');

    const execution = await alice.callTool('slow_scan', { seconds: 1 });
    assert.equal(execution.kind, 'task');
    const created = alice.lastExchange().response?.result ?? {};
    assert.equal(created.resultType, 'task');
    assert.ok(isHandleShaped(created.taskId));
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed');
    const last = alice.lastExchange().response?.result ?? {};
    assert.equal((last.result as Record<string, unknown>).resultType, 'complete');
    assert.match(textOf(last.result) ?? '', /Scan finished/);
    assert.equal(stack.received('tasks/get'), 0, 'the backend saw no tasks/*');
    const call = stack.backends[0]!.stats.requests.filter((r) => r.rpcMethod === 'tools/call').at(-1);
    const capabilities = (call?.body as { params: { _meta: Record<string, { extensions?: Record<string, unknown> }> } }).params._meta['io.modelcontextprotocol/clientCapabilities'];
    assert.equal(capabilities?.extensions?.['io.modelcontextprotocol/tasks'], undefined, 'the backend was not told of the extension');
  });

  it('a client that did not declare the extension gets the plain result, however slow', async () => {
    const plain = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 0.6 } }, { envelope: 'plain' });
    assert.equal(plain.status, 200);
    assert.match(textOf(plain.response?.result) ?? '', /Scan finished/);
  });

  it('relays a fast MRTR answer as it is, and makes a late one the task\'s inputRequests, retrying with the answers', async () => {
    const fast = await alice.raw('tools/call', { name: 'ask_name', arguments: {} });
    assert.equal(fast.response?.result?.resultType, 'input_required', 'a fast MRTR answer goes back as it is');

    const created = await alice.raw('tools/call', { name: 'slow_then_ask', arguments: {} });
    const taskId = String(created.response?.result?.taskId);
    assert.ok(isHandleShaped(taskId), JSON.stringify(created.response));
    const asking = await waitForModernStatus(alice, taskId, 'input_required');
    const keys = Object.keys((asking.raw.inputRequests ?? {}) as object);
    assert.deepEqual(keys, ['1.name'], 'the backend\'s key, made unique over the task\'s life');
    const calls = () => stack.backends[0]!.stats.requests.filter((r) => r.rpcMethod === 'tools/call').length;
    const before = calls();
    await alice.updateTask(taskId, { '1.name': { action: 'accept', content: { name: 'Ada' } } });
    const done = await waitForModernStatus(alice, taskId, 'completed');
    assert.match(textOf(done.raw.result) ?? '', /Hello at last, Ada/);
    assert.equal(calls(), before + 1, 'the call was retried once');
    const retry = stack.backends[0]!.stats.requests.filter((r) => r.rpcMethod === 'tools/call').at(-1);
    const params = (retry?.body as { params: { inputResponses?: Record<string, unknown> } }).params;
    assert.deepEqual(Object.keys(params.inputResponses ?? {}), ['name'], 'the backend got its own keys back');
  });

  it('ends failed with the backend\'s JSON-RPC error inline, and completed with isError for a tool error', async () => {
    const failing = await alice.raw('tools/call', { name: 'fail_task', arguments: {} });
    const failTask = String(failing.response?.result?.taskId);
    const failed = await waitForModernStatus(alice, failTask, 'failed');
    assert.ok(failed);
    const polled = alice.lastExchange().response?.result ?? {};
    assert.equal((polled.error as { code: number }).code, -32603);
    const erring = await alice.raw('tools/call', { name: 'tool_error', arguments: {} });
    const errTask = String(erring.response?.result?.taskId);
    await waitForModernStatus(alice, errTask, 'completed');
    const done = alice.lastExchange().response?.result ?? {};
    assert.equal((done.result as { isError?: boolean }).isError, true);
  });

  it('cancels: the backend call is closed (the 2026 cancellation), the task is cancelled', async () => {
    stack.backends[0]!.stats.reset();
    const started = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
    const taskId = String(started.response?.result?.taskId);
    assert.ok(isHandleShaped(taskId));
    await alice.cancelTask(taskId);
    assert.equal((await waitForModernStatus(alice, taskId, 'cancelled')).status, 'cancelled');
    await waitFor(() => stack.backends[0]!.stats.aborted > 0, 'the backend to see its call closed', 2500, 50);
    assert.equal(stack.backends[0]!.stats.aborted, 1, 'the backend saw its call closed');
  });

  it('answers another principal exactly as an unknown task', async () => {
    const started = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 1 } });
    const taskId = String(started.response?.result?.taskId);
    const bob = await modernClient(stack, 'bob');
    try {
      const foreign = await bob.getTask(taskId).catch((e: unknown) => e);
      const unknown = await bob.getTask('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').catch((e: unknown) => e);
      assert.ok(foreign instanceof JsonRpcResponseError && unknown instanceof JsonRpcResponseError);
      assert.equal(foreign.code, -32602);
      assert.equal(foreign.message, unknown.message);
    } finally {
      await bob.close();
    }
  });
});
