/**
 * Lifetimes and limits: expiry forgets a task and cancels it upstream, a principal's live
 * tasks are capped, read-once tools forget their handle after delivery, status messages are
 * made safe.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { JsonRpcResponseError } from '@modelcontextprotocol/ext-tasks/client';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ExampleServerStats } from '../../examples/mcp-server/server.js';
import { legacyClient, modernClient, startTaskStack } from './support/task-harness.js';

const notFound = (e: unknown) => (e instanceof JsonRpcResponseError || e instanceof McpError) && e.code === -32602;

describe('task lifetimes and limits', () => {
  it('forgets a task when its lifetime ends, and cancels it upstream if it was still running', async () => {
    const stack = await startTaskStack({ era: 'modern', tasks: { ttl: { max: '1s' } } });
    const alice = await modernClient(stack, 'alice');
    try {
      const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      const handle = String(created.response?.result?.taskId);
      assert.equal(created.response?.result?.ttlMs, 1000);
      assert.equal((await alice.getTask(handle)).status, 'working');
      await sleep(2300);
      await assert.rejects(alice.getTask(handle), notFound);
      const cancels = stack.backends[0]!.stats.requests.filter((r) => r.rpcMethod === 'tasks/cancel');
      assert.equal(cancels.length, 1, 'the expired task was cancelled upstream once');
      assert.notEqual((cancels[0]!.body as { params: { taskId: string } }).params.taskId, handle);
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('forgets a 2025 task when its lifetime ends, and cancels it upstream on its own session', async () => {
    const stack = await startTaskStack({ era: 'legacy', tasks: { ttl: { max: '1s' } } });
    const alice = await legacyClient(stack, 'alice');
    try {
      const { task } = await alice.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 3_600_000 } } }, CreateTaskResultSchema);
      assert.equal(task.ttl, 1000);
      assert.equal((await alice.experimental.tasks.getTask(task.taskId)).status, 'working');
      await sleep(2300);
      await assert.rejects(alice.experimental.tasks.getTask(task.taskId), notFound);
      const requests = (stack.backends[0]!.stats as ExampleServerStats).requests;
      const created = requests.find((r) => r.rpcMethod === 'tools/call')!;
      const cancels = requests.filter((r) => r.rpcMethod === 'tasks/cancel');
      assert.equal(cancels.length, 1, 'the expired task was cancelled upstream once');
      assert.equal(cancels[0]!.sessionId, created.sessionId, 'on the session that created it');
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('refuses a creation past the live-task limit with 429 -31002, and cancels it upstream', async () => {
    const stack = await startTaskStack({ era: 'modern', tasks: { maxLivePerPrincipal: 2 } });
    const alice = await modernClient(stack, 'alice');
    const bob = await modernClient(stack, 'bob');
    try {
      for (let i = 0; i < 2; i++) {
        const ok = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
        assert.equal(ok.response?.result?.resultType, 'task');
      }
      const refused = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      assert.equal(refused.status, 429);
      assert.equal(refused.response?.error?.code, -31002);
      assert.deepEqual(refused.response?.error?.data, { maxLiveTasks: 2 });
      await sleep(200);
      assert.equal(stack.received('tasks/cancel'), 1, 'the refused task was cancelled upstream');
      const other = await bob.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      assert.equal(other.response?.result?.resultType, 'task', 'the limit is per principal');
    } finally {
      await alice.close();
      await bob.close();
      await stack.close();
    }
  });

  it('forgets a read-once task once its result is delivered (2026: inline in tasks/get)', async () => {
    const stack = await startTaskStack({ era: 'modern', tasks: { tools: { slow_scan: { readOnce: true } } } });
    const alice = await modernClient(stack, 'alice');
    try {
      const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 0.1 } });
      const handle = String(created.response?.result?.taskId);
      await sleep(400);
      const view = await alice.getTask(handle);
      assert.equal(view.status, 'completed');
      await assert.rejects(alice.getTask(handle), notFound);
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('forgets a read-once task once tasks/result has delivered it (2025)', async () => {
    const stack = await startTaskStack({ era: 'legacy', tasks: { tools: { slow_scan: { readOnce: true } } } });
    const alice = await legacyClient(stack, 'alice');
    try {
      const { task } = await alice.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 0.1 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.match(JSON.stringify(result.content), /scan complete/);
      await assert.rejects(alice.experimental.tasks.getTask(task.taskId), notFound);
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('cuts status messages to the policy length', async () => {
    const stack = await startTaskStack({ era: 'legacy', tasks: { statusMessageMaxLength: 5 } });
    const alice = await legacyClient(stack, 'alice');
    try {
      const { task } = await alice.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 2 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      await sleep(700);
      const polled = await alice.experimental.tasks.getTask(task.taskId);
      assert.equal(polled.statusMessage, 'scann');
    } finally {
      await alice.close();
      await stack.close();
    }
  });
});
