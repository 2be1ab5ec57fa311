/**
 * Tasks the gateway runs itself, on two gateway processes sharing one Redis: a task started
 * through one replica is polled, answered, updated and cancelled through the other; a replica
 * killed mid-call has its tasks ended failed by the other within the lease; a replica stopped
 * with SIGTERM ends its calls failed once the drain time is over.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LEGACY_POST_HEADERS, startJwksServer, type JwksServer, metricSample } from './support/harness.js';
import { readMessages } from './support/reply-messages.js';
import type { ModernTaskClient } from './support/modern-client.js';
import type { GatewayProcess } from './support/gateway-process.js';
import { Replicas, replicaStore } from './support/replica-harness.js';
import { waitFor, waitForValue } from '../support/wait.js';
import { assertTaskObject } from './support/task-schemas.js';
import { recordTaskStatus } from './support/task-waits.js';
import { RedisServerProcess, redisServerOrReport } from '../support/redis-servers.js';

const installed = redisServerOrReport();

/** tasks.provided.lease in this policy: a killed replica's tasks end within it plus a sweep. */
const LEASE_MS = 1500;

describe('tasks the gateway runs, on two replicas sharing Redis', { skip: !installed }, () => {
  let redis: RedisServerProcess;
  let modern: ModernTaskServer;
  let legacy: ExampleServer;
  let jwks: JwksServer;
  let policy: string;
  const replicas = new Replicas(() => jwks);
  const running = replicas.running;
  const start = () => replicas.start(policy);
  const client = (gateway: GatewayProcess) => replicas.client(gateway);
  const openLegacySession = (gateway: GatewayProcess) => replicas.openLegacySession(gateway);
  const statusVia = async (c: ModernTaskClient, taskId: string) => (await c.raw('tasks/get', { taskId })).response?.result ?? {};
  const untilStatus = (c: ModernTaskClient, taskId: string, status: string, ms: number) => {
    let task: Record<string, unknown> | undefined;
    return waitForValue(
      async () => {
        task = await statusVia(c, taskId);
        return task.status === status ? task : undefined;
      },
      () => `task ${taskId} to be ${status} (it is ${String(task?.status)})`,
      ms,
      100,
    );
  };

  before(async () => {
    redis = await RedisServerProcess.start();
    modern = await startModernTaskServer({ name: 'plain-2026', tasks: false, workMs: 800 });
    legacy = await startExampleServer({ name: 'plain-2025', tasks: false });
    jwks = await startJwksServer({ algs: ['ES256'] });
    policy = await replicas.writePolicy('policy.yaml', {
      upstreams: {
        modern: { instances: [new URL(modern.url).origin], providedTasks: { tools: 'all', promoteAfter: '200ms' } },
        legacy: { instances: [new URL(legacy.url).origin], providedTasks: { tools: 'all' } },
      },
      routes: [
        { path: '/mcp', upstream: 'modern' },
        { path: '/legacy', upstream: 'legacy', upstreamPath: '/mcp' },
      ],
      store: replicaStore(redis.port, 'tg-provided:'),
      tasks: { poll: { default: '100ms' }, provided: { lease: `${LEASE_MS}ms` } },
      limits: { drainTimeout: '400ms' },
    });
  });
  after(async () => {
    await replicas.close();
    await Promise.allSettled([modern?.close(), legacy?.close(), jwks?.close(), redis?.stop()]);
  });

  it('2026: started through A, asked for input, answered and finished through B; cancelled through B while A holds the call', async () => {
    const a = await start();
    const b = await start();
    const viaA = await client(a);
    const viaB = await client(b);

    const asking = String((await viaA.raw('tools/call', { name: 'slow_then_ask', arguments: {} })).response?.result?.taskId);
    const input = await untilStatus(viaB, asking, 'input_required', 8000);
    assert.deepEqual(Object.keys(input.inputRequests as object), ['1.name']);
    await viaB.raw('tasks/update', { taskId: asking, inputResponses: { '1.name': { action: 'accept', content: { name: 'Grace' } } } });
    const done = await untilStatus(viaA, asking, 'completed', 8000);
    assert.match(JSON.stringify(done.result), /Hello at last, Grace/);

    modern.stats.reset();
    const long = String((await viaA.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } })).response?.result?.taskId);
    assert.equal((await viaB.raw('tasks/cancel', { taskId: long })).response?.result?.resultType, 'complete');
    await untilStatus(viaA, long, 'cancelled', 4000);
    await waitFor(() => modern.stats.aborted > 0, 'the backend to see the call closed', 3000, 50);
    assert.equal(modern.stats.aborted, 1, 'A closed the call when B cancelled the task');
  });

  it('2025: started through A, its result read through B', async () => {
    const [a, b] = running.slice(-2) as [GatewayProcess, GatewayProcess];
    const session = await openLegacySession(a);
    const created = await legacyPost(a, session, { method: 'tools/call', params: { name: 'slow_report', arguments: { seconds: 0.5, steps: 2 }, task: { ttl: 60_000 } } });
    const taskId = (created as { result: { task: { taskId: string } } }).result.task.taskId;
    // Tasks are bound to their principal, not the session: B reaches it under a session of its own.
    const other = await openLegacySession(b);
    const result = (await legacyPost(b, other, { method: 'tasks/result', params: { taskId } })) as { result: { content: Array<{ text: string }> } };
    assert.match(result.result.content[0]!.text, /Report ready/);
  });

  it('2025: a task created through B has its status pushed on the session\'s GET stream, held by A', async () => {
    const [a, b] = running.slice(-2) as [GatewayProcess, GatewayProcess];
    const token = await jwks.mint({ sub: 'alice', aud: 'http://127.0.0.1/legacy' });
    const sdk = new Client({ name: 'push-client', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/legacy`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    await sdk.connect(transport);
    try {
      const pushed = recordTaskStatus(sdk);
      // The SDK client opens its GET stream after initialize; A relays it.
      await waitFor(async () => (await metricSample(a.adminUrl, 'taskgate_provided_status_sessions')) === 1, 'A to hold the GET stream');
      const session = { ...LEGACY_POST_HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': transport.sessionId! };
      const created = await legacyPost(b, session, { method: 'tools/call', params: { name: 'slow_report', arguments: { seconds: 0.3, steps: 1 }, task: { ttl: 60_000 } } });
      const taskId = (created as { result: { task: { taskId: string } } }).result.task.taskId;
      await waitFor(() => pushed.statusesOf(taskId).at(-1) === 'completed', 'the completion pushed through A');
      assert.deepEqual(pushed.statusesOf(taskId), ['completed']);
      for (const message of pushed.raw) assertTaskObject('legacy', 'notification', message);
    } finally {
      await sdk.close();
    }
  });

  it('a replica killed mid-call: the other ends its task failed within the lease, saying why', async () => {
    const [a, b] = running.slice(-2) as [GatewayProcess, GatewayProcess];
    const viaA = await client(a);
    const viaB = await client(b);
    const task = String((await viaA.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 60 } })).response?.result?.taskId);
    const killed = Date.now();
    await a.stop('SIGKILL');
    const failed = await untilStatus(viaB, task, 'failed', LEASE_MS * 4 + 2000);
    assert.match(String(failed.statusMessage), /replica running this task stopped/);
    // The documented bound is the lease plus one sweep; the margin is for a loaded machine.
    assert.ok(Date.now() - killed < LEASE_MS * 4 + 2000);
  });

  it('a replica stopped with SIGTERM: its calls get the drain time, then end failed', async () => {
    const c = await start();
    const d = running.at(-2)!;
    const viaC = await client(c);
    const viaD = await client(d);
    const task = String((await viaC.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 60 } })).response?.result?.taskId);
    assert.equal((await statusVia(viaD, task)).status, 'working');
    await c.stop('SIGTERM');
    const failed = await untilStatus(viaD, task, 'failed', 4000);
    assert.match(String(failed.statusMessage), /shut down before the backend answered/);
  });

  async function legacyPost(gateway: GatewayProcess, headers: Record<string, string>, message: Record<string, unknown>): Promise<unknown> {
    const res = await fetch(`${gateway.url}/legacy`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 2, ...message }) });
    return (await readMessages(res)).at(-1);
  }
});
