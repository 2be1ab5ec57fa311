/**
 * Tasks the gateway runs itself, at their limits: governed polls, the per-replica cap on held
 * calls, the per-principal live-task limit, the call timeout, the result size cap, lifetimes,
 * read-once delivery, and a backend that goes away mid-call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ExampleServerStats } from '../../examples/mcp-server/server.js';
import { legacyClient, modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { createLegacyTask, waitForLegacyStatus, waitForModernStatus } from './support/task-waits.js';
import { waitFor } from '../support/wait.js';

const metric = async (stack: TaskStack, pattern: RegExp): Promise<number> => {
  const text = await (await fetch(`${stack.gw.adminUrl}/metrics`)).text();
  return Number(pattern.exec(text)?.[1] ?? 0);
};

describe('tasks the gateway runs: limits, lifetimes and failures (2025-11-25)', () => {
  let stack: TaskStack;
  let alice: Client;
  before(async () => {
    stack = await startTaskStack({
      era: 'legacy',
      plain: true,
      providedTasks: { tools: ['slow_report', 'echo'], timeout: '1500ms' },
      tasks: {
        maxLivePerPrincipal: 2,
        poll: { default: '2s' },
        provided: { maxRunning: 3, maxResultBytes: '64B' },
        tools: { echo: { readOnce: true } },
      },
    });
    alice = await legacyClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('governs polls like any task: an early one is answered from the snapshot', async () => {
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 0.3, steps: 1 });
    const before = await metric(stack, /taskgate_polls_total\{outcome="cached"\} (\d+)/);
    const first = await alice.experimental.tasks.getTask(task.taskId);
    const early = await alice.experimental.tasks.getTask(task.taskId);
    assert.deepEqual(early, first);
    assert.equal(await metric(stack, /taskgate_polls_total\{outcome="cached"\} (\d+)/), before + 1);
  });

  it('refuses a creation past the principal\'s live tasks (-31002), and past the replica\'s held calls (-31006)', async () => {
    await sleep(400);
    // HTTP 429 with the JSON-RPC error: the SDK client reports it as a transport error, quoting the body.
    const rejected = (code: number) => (e: unknown) => e instanceof Error && e.message.includes(String(code));
    const alices = [await createLegacyTask(alice, 'slow_report', { seconds: 5, steps: 5 }), await createLegacyTask(alice, 'slow_report', { seconds: 5, steps: 5 })];
    const bob = await legacyClient(stack, 'bob');
    try {
      await assert.rejects(createLegacyTask(alice, 'slow_report', { seconds: 5 }), rejected(-31002));
      const bobs = await createLegacyTask(bob, 'slow_report', { seconds: 5, steps: 5 });
      // Three calls held, the replica's cap: bob's second is refused though he has one live task.
      await assert.rejects(createLegacyTask(bob, 'slow_report', { seconds: 5 }), rejected(-31006));
      await bob.experimental.tasks.cancelTask(bobs.taskId);
    } finally {
      await bob.close();
      for (const task of alices) await alice.experimental.tasks.cancelTask(task.taskId);
    }
  });

  it('ends a call that outlasts upstreams.*.providedTasks.timeout failed, saying why', async () => {
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 20, steps: 20 });
    const failed = await waitForLegacyStatus(alice, task.taskId, 'failed');
    assert.match(failed.statusMessage ?? '', /did not answer within 1500 ms/);
  });

  it('ends a task whose result is over tasks.provided.maxResultBytes failed, never cut', async () => {
    const task = await createLegacyTask(alice, 'echo', { text: 'x'.repeat(200) });
    const failed = await waitForLegacyStatus(alice, task.taskId, 'failed');
    assert.match(failed.statusMessage ?? '', /larger than tasks\.provided\.maxResultBytes/);
  });

  it('forgets a read-once task once its result was delivered', async () => {
    const task = await createLegacyTask(alice, 'echo', { text: 'once' });
    await waitForLegacyStatus(alice, task.taskId, 'completed');
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.match(JSON.stringify(result.content), /once/);
    await assert.rejects(alice.experimental.tasks.getTask(task.taskId), (e: unknown) => e instanceof McpError && e.code === -32602);
  });

  it('forgets a task at the end of its lifetime and stops its call', async () => {
    (stack.backends[0]!.stats as ExampleServerStats).reset();
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 1.2, steps: 12 }, 600);
    await sleep(1200);
    await assert.rejects(alice.experimental.tasks.getTask(task.taskId), (e: unknown) => e instanceof McpError && e.code === -32602);
    const stats = stack.backends[0]!.stats as ExampleServerStats;
    await waitFor(() => stats.cancelled > 0, 'the backend\'s call to be cancelled', 2000, 50);
    assert.equal(stats.cancelled, 1, 'the backend\'s call was cancelled');
  });
});

describe('tasks the gateway runs: a backend that goes away mid-call (2026-07-28)', () => {
  let stack: TaskStack;
  before(async () => {
    stack = await startTaskStack({ era: 'modern', plain: true, providedTasks: { tools: 'all', promoteAfter: '200ms' }, tasks: { poll: { default: '100ms' } } });
  });
  after(async () => {
    await stack?.close();
  });

  it('ends the task failed, saying the call broke off', async () => {
    const client = await modernClient(stack, 'carol');
    try {
      const started = await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      const taskId = String(started.response?.result?.taskId);
      await stack.backends[0]!.close();
      const view = await waitForModernStatus(client, taskId, 'failed', 8000, 100);
      assert.equal(view.status, 'failed');
      assert.match(view.statusMessage ?? '', /backend/);
    } finally {
      await client.close();
    }
  });
});
