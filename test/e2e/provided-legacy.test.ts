/**
 * Tasks the gateway runs itself, 2025-11-25: an SDK 1.x server with plain tools only (no task
 * capability), the SDK 1.x client's task API, JWT principals.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ExampleServerStats } from '../../examples/mcp-server/server.js';
import { isHandleShaped } from '../../src/tasks/handle.js';
import { legacyClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { createLegacyTask, waitForLegacyStatus } from './support/task-waits.js';
import { waitFor } from '../support/wait.js';

const stats = (stack: TaskStack) => stack.backends[0]!.stats as ExampleServerStats;

describe('2025-11-25 tasks the gateway runs for a server that has none', () => {
  let stack: TaskStack;
  let alice: Client;
  before(async () => {
    stack = await startTaskStack({
      era: 'legacy',
      plain: true,
      providedTasks: { tools: ['slow_report', 'elicit_color', 'report_error', 'no_such_tool'] },
      tasks: { poll: { default: '100ms' } },
    });
    alice = await legacyClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('advertises tasks in initialize and tools/list', async () => {
    const tasks = alice.getServerCapabilities()?.tasks;
    assert.deepEqual(tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await alice.listTools();
    assert.equal(tools.find((t) => t.name === 'slow_report')?.execution?.taskSupport, 'optional');
    // A tool the policy does not name keeps what the backend said (SDK 1.x: forbidden).
    assert.equal(tools.find((t) => t.name === 'echo')?.execution?.taskSupport, 'forbidden');
  });

  it('runs a plain tool as a task: created at once, polled, completed with its result', async () => {
    stats(stack).reset();
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 0.6, steps: 3 });
    assert.ok(isHandleShaped(task.taskId));
    assert.equal(task.status, 'working');
    const done = await waitForLegacyStatus(alice, task.taskId, ['completed']);
    assert.equal(done.status, 'completed');
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.match(JSON.stringify(result.content), /Report ready/);
    const calls = stats(stack).requests.filter((r) => r.rpcMethod === 'tools/call');
    assert.equal(calls.length, 1);
    assert.equal((calls[0]!.body as { params: { task?: unknown } }).params.task, undefined, 'the backend got a plain call');
    assert.equal(stack.received('tasks/get') + stack.received('tasks/result'), 0, 'the backend saw no tasks/*');
  });

  it('shows backend progress as the statusMessage while it runs', async () => {
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 2, steps: 4 });
    const seen = await waitForLegacyStatus(alice, task.taskId, ['working', 'completed'], 5000);
    let message = seen.statusMessage;
    for (let i = 0; i < 40 && !message?.startsWith('step'); i++) {
      await sleep(100);
      message = (await alice.experimental.tasks.getTask(task.taskId)).statusMessage;
    }
    assert.match(message ?? '', /^step \d of 4$/);
    await waitForLegacyStatus(alice, task.taskId, ['completed']);
  });

  it('relays a question the backend asks mid-call on tasks/result, and routes the answer back to the call', async () => {
    const client = await legacyClient(stack, 'alice-colour');
    // The harness client answers elicitations with a name; this one answers with a colour.
    client.setRequestHandler((await import('@modelcontextprotocol/sdk/types.js')).ElicitRequestSchema, async (request) => {
      assert.equal((request.params._meta?.['io.modelcontextprotocol/related-task'] as { taskId?: string } | undefined)?.taskId !== undefined, true);
      return { action: 'accept', content: { color: 'teal' } };
    });
    try {
      const task = await createLegacyTask(client, 'elicit_color');
      assert.equal((await waitForLegacyStatus(client, task.taskId, ['input_required'])).status, 'input_required');
      const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.match(JSON.stringify(result.content), /Colour: teal/);
      assert.equal((result._meta?.['io.modelcontextprotocol/related-task'] as { taskId: string }).taskId, task.taskId);
      assert.equal((await waitForLegacyStatus(client, task.taskId, ['completed'])).status, 'completed');
    } finally {
      await client.close();
    }
  });

  it('cancels: the backend sees notifications/cancelled, the task is cancelled, a second cancel is -32602', async () => {
    stats(stack).reset();
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 30, steps: 30 });
    await sleep(200);
    const cancelled = await alice.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.taskId, task.taskId);
    await assert.rejects(alice.experimental.tasks.cancelTask(task.taskId), (e: unknown) => e instanceof McpError && e.code === -32602);
    await assert.rejects(alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), (e: unknown) => e instanceof McpError && e.code === -32603);
    await waitFor(() => stats(stack).cancelled > 0, 'the backend\'s tool to see the cancellation', 2500, 50);
    assert.equal(stats(stack).cancelled, 1, 'the backend\'s tool saw the cancellation');
    const notice = stats(stack).requests.find((r) => r.rpcMethod === 'notifications/cancelled');
    assert.ok(notice, 'notifications/cancelled reached the backend');
    assert.equal((await alice.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
  });

  it('ends failed on a tool error (isError: true), keeping the result tasks/result answers', async () => {
    for (const [tool, text] of [['report_error', /source unavailable/], ['no_such_tool', /not found/]] as const) {
      const task = await createLegacyTask(alice, tool, { ms: 50 });
      assert.equal((await waitForLegacyStatus(alice, task.taskId, ['failed', 'completed'])).status, 'failed');
      const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.equal(result.isError, true);
      assert.match(JSON.stringify(result.content), text);
    }
  });

  it('answers another principal exactly as an unknown task, and lists only the caller\'s own', async () => {
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 0.2, steps: 1 });
    const bob = await legacyClient(stack, 'bob');
    try {
      const refusals = await Promise.all([
        bob.experimental.tasks.getTask(task.taskId).catch((e: unknown) => e),
        bob.experimental.tasks.getTask('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').catch((e: unknown) => e),
        bob.experimental.tasks.cancelTask(task.taskId).catch((e: unknown) => e),
        bob.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).catch((e: unknown) => e),
      ]);
      for (const refusal of refusals) {
        assert.ok(refusal instanceof McpError && refusal.code === -32602, String(refusal));
        assert.equal(refusal.message, (refusals[1] as McpError).message);
      }
      const bobs = await bob.experimental.tasks.listTasks();
      assert.equal(bobs.tasks.length, 0);
      const alices = await alice.experimental.tasks.listTasks();
      assert.ok(alices.tasks.some((t) => t.taskId === task.taskId));
    } finally {
      await bob.close();
    }
  });

  it('keeps a call this replica still runs when its lease lapsed in a stall, instead of failing its task', async () => {
    const reclaims = async () => (await stack.gw.gateway.metrics.providedLeaseReclaims.get()).values[0]?.value ?? 0;
    const before = await reclaims();
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 1.5, steps: 2 });
    await sleep(300); // the call takes its lease once the task is stored
    // The sweep as it runs after a stall past the lease: every lease (15 s) this replica holds has lapsed.
    const ended = await stack.gw.gateway.provided.sweepLapsedLeases(200, Date.now() + 16_000);
    assert.equal(ended, 0, 'no task ended by the sweep');
    assert.equal(await reclaims(), before + 1);
    assert.equal((await waitForLegacyStatus(alice, task.taskId, ['completed', 'failed'], 5000)).status, 'completed');
  });
});
