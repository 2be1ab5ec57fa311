/**
 * Task takeover, 2025-11-25 generation: the SDK 1.x client and server, JWT principals, the
 * gateway owning every task id the client sees.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, McpError, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ExampleServerStats } from '../../examples/mcp-server/server.js';
import { isHandleShaped } from '../../src/tasks/handle.js';
import { legacyClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { createLegacyTask, waitForLegacyStatus } from './support/task-waits.js';
import { waitFor } from '../support/wait.js';

const backendIds = (stack: TaskStack, method: string): string[] =>
  stack.backends.flatMap((b) =>
    b.stats.requests
      .filter((r) => r.rpcMethod === method)
      .map((r) => String((r.body as { params?: { taskId?: string } } | undefined)?.params?.taskId)),
  );

describe('2025-11-25 task takeover through the gateway', () => {
  let stack: TaskStack;
  let alice: Client;
  before(async () => {
    stack = await startTaskStack({ era: 'legacy', tasks: { ttl: { max: '30s' }, statusMessageMaxLength: 40 } });
    alice = await legacyClient(stack, 'alice', { name: 'Ada' });
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('advertises tasks/list, which the gateway serves, now that principals are verified', () => {
    assert.deepEqual(alice.getServerCapabilities()?.tasks?.list, {});
  });

  it('shows a handle, never the backend id, and reaches the task with the backend id upstream', async () => {
    const task = await createLegacyTask(alice, 'slow_scan', { seconds: 0.5 });
    assert.ok(isHandleShaped(task.taskId), `not a handle: ${task.taskId}`);
    assert.equal(task.ttl, 30_000, 'the requested 60s is capped to the policy maximum');
    assert.equal((await waitForLegacyStatus(alice, task.taskId, ['completed'])).status, 'completed');
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.match(JSON.stringify(result.content), /scan complete/);
    assert.equal((result._meta?.['io.modelcontextprotocol/related-task'] as { taskId: string }).taskId, task.taskId);
    const upstreamIds = new Set(backendIds(stack, 'tasks/get'));
    assert.equal(upstreamIds.size, 1);
    assert.ok(!upstreamIds.has(task.taskId), 'the backend saw the handle');
    const requested = stack.backends[0]!.stats.requests.find((r) => r.rpcMethod === 'tools/call');
    assert.equal((requested?.body as { params: { task: { ttl: number } } }).params.task.ttl, 30_000, 'the backend was asked for the capped ttl');
  });

  it('relays the elicitation of an input_required task on tasks/result under a gateway id, and routes the answer back', async () => {
    const task = await createLegacyTask(alice, 'ask_name');
    assert.equal((await waitForLegacyStatus(alice, task.taskId, ['input_required'])).status, 'input_required');
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.match(JSON.stringify(result.content), /Hello, Ada/);
    const answer = stack.backends[0]!.stats.requests.find((r) => r.method === 'POST' && !r.rpcMethod && (r.body as { result?: unknown })?.result);
    assert.equal(typeof (answer?.body as { id: unknown }).id, 'number', 'the backend got its own request id back');
  });

  it('cancels: the task is cancelled, a second cancel is -32602', async () => {
    const task = await createLegacyTask(alice, 'slow_scan', { seconds: 30 });
    const cancelled = await alice.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.taskId, task.taskId);
    await assert.rejects(alice.experimental.tasks.cancelTask(task.taskId), (e: unknown) => e instanceof McpError && e.code === -32602);
  });

  it('relays notifications/tasks/status on the GET stream with the handle, never the backend id', async () => {
    const seen: Array<{ taskId: string; status: string }> = [];
    alice.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
      seen.push({ taskId: n.params.taskId, status: n.params.status });
    });
    const task = await createLegacyTask(alice, 'slow_scan', { seconds: 0.6 });
    assert.equal((await waitForLegacyStatus(alice, task.taskId, ['completed'])).status, 'completed');
    await waitFor(() => seen.some((n) => n.status === 'completed'), () => `a completed notification; seen: ${JSON.stringify(seen)}`, 3000);
    const mine = seen.filter((n) => n.taskId === task.taskId);
    assert.ok(mine.some((n) => n.status === 'completed'), `notifications seen: ${JSON.stringify(seen)}`);
    const upstreamIds = new Set(backendIds(stack, 'tasks/get'));
    assert.ok(!seen.some((n) => upstreamIds.has(n.taskId)), 'a backend task id reached the client');
  });

  it('marks a failing tool failed', async () => {
    const task = await createLegacyTask(alice, 'fail_task');
    assert.equal((await waitForLegacyStatus(alice, task.taskId, ['failed', 'completed'])).status, 'failed');
  });

  it('reaches the same tasks from a new session of the same principal, on the creating session upstream', async () => {
    const requests = (stack.backends[0]!.stats as ExampleServerStats).requests;
    const task = await createLegacyTask(alice, 'slow_scan', { seconds: 0.2 });
    const creatingSession = requests.filter((r) => r.rpcMethod === 'tools/call').at(-1)!.sessionId;
    const again = await legacyClient(stack, 'alice');
    try {
      const newSession = requests.filter((r) => r.rpcMethod === 'notifications/initialized').at(-1)!.sessionId;
      assert.notEqual(newSession, creatingSession);
      assert.equal((await waitForLegacyStatus(again, task.taskId, ['completed'])).status, 'completed');
      assert.equal(requests.filter((r) => r.rpcMethod === 'tasks/get').at(-1)!.sessionId, creatingSession);
    } finally {
      await again.close();
    }
  });

  it('lists only the caller\'s own tasks, paged with the gateway\'s cursor', async () => {
    const bob = await legacyClient(stack, 'bob');
    try {
      const mine = await createLegacyTask(bob, 'slow_scan', { seconds: 0.1 });
      const listed = await bob.experimental.tasks.listTasks();
      assert.deepEqual(listed.tasks.map((t) => t.taskId), [mine.taskId]);
      const aliceList = await alice.experimental.tasks.listTasks();
      assert.ok(aliceList.tasks.length >= 4);
      assert.ok(!aliceList.tasks.some((t) => t.taskId === mine.taskId));
      assert.equal(stack.received('tasks/list'), 0, 'tasks/list never reaches the backend');
      const metrics = await (await fetch(`${stack.gw.adminUrl}/metrics`)).text();
      assert.match(metrics, /^taskgate_task_operations_total\{method="tasks\/list",outcome="allowed"\} 2$/m, 'lists are counted (and audited) as task operations');
      await assert.rejects(alice.experimental.tasks.listTasks('not-a-cursor'), (e: unknown) => e instanceof McpError && e.code === -32602);
    } finally {
      await bob.close();
    }
  });
});

describe('2025-11-25 tasks/list paging', () => {
  it('pages with nextCursor until the list ends', async () => {
    const stack = await startTaskStack({ era: 'legacy', tasks: { listPageSize: 2 } });
    const carol = await legacyClient(stack, 'carol');
    try {
      const created = [];
      for (let i = 0; i < 5; i++) created.push((await createLegacyTask(carol, 'slow_scan', { seconds: 0.05 })).taskId);
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await carol.experimental.tasks.listTasks(cursor);
        assert.ok(page.tasks.length <= 2);
        seen.push(...page.tasks.map((t) => t.taskId));
        cursor = page.nextCursor;
      } while (cursor);
      assert.deepEqual(seen.sort(), created.sort());
    } finally {
      await carol.close();
      await stack.close();
    }
  });
});
