/**
 * Poll governance: clients are held to each task's own poll interval. Early polls are answered
 * from the owner's last snapshot (cached) or refused with Retry-After (reject); abuse is
 * refused in both modes; creation rate and open tasks/result waits are capped per principal.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { legacyClient, modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { waitFor } from '../support/wait.js';

/** Backend tasks/get calls for one backend task id. */
function backendPolls(stack: TaskStack, upstreamId: string): number {
  return stack.backends[0]!.stats.requests.filter(
    (r) => r.rpcMethod === 'tasks/get' && (r.body as { params: { taskId: string } }).params.taskId === upstreamId,
  ).length;
}

function lastUpstreamId(stack: TaskStack): string {
  const polls = stack.backends[0]!.stats.requests.filter((r) => r.rpcMethod === 'tasks/get');
  return (polls.at(-1)!.body as { params: { taskId: string } }).params.taskId;
}

describe('poll governance', () => {
  it('cached: a client polling 10x too fast gets valid task objects while the backend sees ceil(T/interval)+1 polls', async () => {
    const stack = await startTaskStack({ era: 'legacy' }); // the example backend advertises 200 ms
    const alice = await legacyClient(stack, 'alice');
    try {
      const { task } = await alice.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      assert.equal(task.pollInterval, 200);
      // A number of polls, not a span of time: a loaded runner makes fewer polls in a second,
      // and the bound below follows the time they really took.
      const started = Date.now();
      let answers = 0;
      while (answers < 40) {
        const polled = await alice.experimental.tasks.getTask(task.taskId);
        assert.equal(polled.taskId, task.taskId);
        assert.equal(polled.status, 'working');
        assert.equal(polled.pollInterval, 200);
        assert.equal(typeof polled.createdAt, 'string');
        answers++;
        await sleep(20);
      }
      const elapsed = Date.now() - started;
      const forwarded = backendPolls(stack, lastUpstreamId(stack));
      assert.ok(forwarded <= Math.ceil(elapsed / 200) + 1, `${forwarded} polls reached the backend in ${elapsed} ms`);
      assert.ok(forwarded >= 3, 'polls on time still reach the backend');
      // Counted as each answer finishes: the last one may still be on its way into the registry.
      let metrics = '';
      const polls = (outcome: string) => Number(new RegExp(`^taskgate_polls_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0);
      await waitFor(
        async () => {
          metrics = await (await fetch(`${stack.gw.adminUrl}/metrics`)).text();
          return polls('forwarded') + polls('cached') >= answers;
        },
        () => `every poll counted (forwarded ${polls('forwarded')}, cached ${polls('cached')}, of ${answers})`,
        2000,
      );
      // Every poll was either forwarded or answered from the cache, and the metric says which.
      assert.equal(polls('forwarded'), forwarded);
      assert.equal(polls('cached'), answers - forwarded);
      assert.ok(polls('cached') > 0);
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('reject: every early poll gets 429 with the seconds until the next allowed one', async () => {
    const stack = await startTaskStack({ era: 'modern', pollIntervalMs: 500, tasks: { poll: { mode: 'reject' } } });
    const alice = await modernClient(stack, 'alice');
    try {
      const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      const taskId = String(created.response?.result?.taskId);
      const started = Date.now();
      let rejected = 0;
      for (let polls = 0; polls < 40; polls++) {
        const polled = await alice.raw('tasks/get', { taskId });
        if (polled.status === 429) {
          rejected++;
          assert.equal(polled.response?.error?.code, -31001);
          const waitMs = (polled.response?.error?.data as { retryAfterMs: number }).retryAfterMs;
          assert.ok(waitMs > 0 && waitMs <= 500, String(waitMs));
          assert.equal(polled.headers.get('retry-after'), String(Math.max(1, Math.ceil(waitMs / 1000))));
        } else {
          assert.equal(polled.status, 200);
          assert.equal(polled.response?.result?.taskId, taskId);
        }
        await sleep(50);
      }
      const elapsed = Date.now() - started;
      const forwarded = backendPolls(stack, lastUpstreamId(stack));
      // 40 polls 50 ms apart against a 500 ms interval: most are early, however slow the runner.
      assert.ok(rejected >= 10, `only ${rejected} early polls`);
      assert.ok(forwarded <= Math.ceil(elapsed / 500) + 1, `${forwarded} polls reached the backend in ${elapsed} ms`);
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('follows a backend that changes its interval mid-task, from the next answer on', async () => {
    const stack = await startTaskStack({ era: 'modern', pollIntervalMs: 100 });
    const alice = await modernClient(stack, 'alice');
    try {
      const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      const taskId = String(created.response?.result?.taskId);
      assert.equal((await alice.raw('tasks/get', { taskId })).response?.result?.pollIntervalMs, 100);
      const upstreamId = lastUpstreamId(stack);
      (stack.modern[0] as ModernTaskServer).tasks.setPollInterval(upstreamId, 1000);
      await sleep(150);
      assert.equal((await alice.raw('tasks/get', { taskId })).response?.result?.pollIntervalMs, 1000, 'the next forwarded answer tells the new interval');
      const before = backendPolls(stack, upstreamId);
      const started = Date.now();
      while (Date.now() - started < 1500) {
        assert.equal((await alice.raw('tasks/get', { taskId })).response?.result?.pollIntervalMs, 1000);
        await sleep(50);
      }
      assert.ok(backendPolls(stack, upstreamId) - before <= Math.ceil((Date.now() - started) / 1000) + 1);
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('raises the interval to the policy floor and holds the client to it', async () => {
    const stack = await startTaskStack({ era: 'modern', pollIntervalMs: 100, tasks: { poll: { floor: '1s', mode: 'reject' } } });
    const alice = await modernClient(stack, 'alice');
    try {
      const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      assert.equal(created.response?.result?.pollIntervalMs, 1000);
      const taskId = String(created.response?.result?.taskId);
      assert.equal((await alice.raw('tasks/get', { taskId })).status, 200);
      await sleep(300);
      assert.equal((await alice.raw('tasks/get', { taskId })).status, 429, 'the backend\'s 100 ms is not what counts');
      await sleep(800);
      const onTime = await alice.raw('tasks/get', { taskId });
      assert.equal(onTime.status, 200);
      assert.equal(onTime.response?.result?.pollIntervalMs, 1000);
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('refuses a client polling far faster than asked even in cached mode', async () => {
    const stack = await startTaskStack({ era: 'modern', pollIntervalMs: 2000, tasks: { poll: { abuseFactor: 3 } } });
    const alice = await modernClient(stack, 'alice');
    try {
      const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      const taskId = String(created.response?.result?.taskId);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await alice.raw('tasks/get', { taskId })).status);
      assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
    } finally {
      await alice.close();
      await stack.close();
    }
  });
});

describe('per-principal task limits', () => {
  it('caps the creation rate; a 2025 request over it never reaches the backend', async () => {
    const stack = await startTaskStack({ era: 'legacy', tasks: { createRate: { limit: 2, window: '1m' } } });
    const alice = await legacyClient(stack, 'alice');
    try {
      const create = () => alice.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      await create();
      await create();
      // The SDK client reports the 429's JSON-RPC body inside its transport error.
      await assert.rejects(create(), (e: unknown) => /-31003/.test(String(e)) || (e instanceof McpError && e.code === -31003));
      assert.equal(stack.received('tools/call'), 2);
    } finally {
      await alice.close();
      await stack.close();
    }
  });

  it('caps open tasks/result waits per principal', async () => {
    const stack = await startTaskStack({ era: 'legacy', tasks: { maxResultWaitsPerPrincipal: 1 } });
    const alice = await legacyClient(stack, 'alice');
    try {
      const { task } = await alice.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 2 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      const first = alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      await sleep(200);
      await assert.rejects(alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema), (e: unknown) => /-31003/.test(String(e)));
      await first;
      await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema); // the slot was given back
    } finally {
      await alice.close();
      await stack.close();
    }
  });
});
