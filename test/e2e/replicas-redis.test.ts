/**
 * Two gateway processes on one Redis: one truth for tasks, polls and lists, across replicas,
 * kills and restarts; and failing closed while Redis is away, recovering when it returns.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { startJwksServer, type JwksServer, waitUntilReady } from './support/harness.js';
import type { GatewayProcess } from './support/gateway-process.js';
import { Replicas, replicaStore } from './support/replica-harness.js';
import { RedisServerProcess, redisServerOrReport } from '../support/redis-servers.js';
import { readMessages } from './support/reply-messages.js';

const installed = redisServerOrReport();

describe('two gateway replicas on one Redis', { skip: !installed }, () => {
  let redis: RedisServerProcess;
  let modern: ModernTaskServer;
  let legacy: ExampleServer;
  let jwks: JwksServer;
  let policy: string;
  /** The same policy with admin.readiness.store: reported. */
  let reportingPolicy: string;
  const replicas = new Replicas(() => jwks);
  const start = () => replicas.start(policy);
  const client = (gateway: GatewayProcess) => replicas.client(gateway);
  const openLegacySession = (gateway: GatewayProcess) => replicas.openLegacySession(gateway);

  before(async () => {
    redis = await RedisServerProcess.start();
    modern = await startModernTaskServer({ pollIntervalMs: 500 });
    legacy = await startExampleServer({ name: 'legacy' });
    jwks = await startJwksServer({ algs: ['ES256'] });
    const parts = {
      upstreams: { modern: { instances: [new URL(modern.url).origin] }, legacy: { instances: [new URL(legacy.url).origin] } },
      routes: [
        { path: '/mcp', upstream: 'modern' },
        { path: '/legacy', upstream: 'legacy', upstreamPath: '/mcp' },
      ],
      store: replicaStore(redis.port, 'tg-replicas:', { commandTimeout: '300ms' }),
      tasks: { poll: { mode: 'reject', tolerance: '0s' } },
    };
    policy = await replicas.writePolicy('policy.yaml', parts);
    reportingPolicy = await replicas.writePolicy('reporting.yaml', { ...parts, admin: { host: '127.0.0.1', port: 0, readiness: { store: 'reported' } } });
  });
  after(async () => {
    await replicas.close();
    await Promise.allSettled([modern?.close(), legacy?.close(), jwks?.close(), redis?.stop()]);
  });

  it('serves every task from either replica, governs polls as one, lists across replicas, and survives kills and restarts', async () => {
    const a = await start();
    const b = await start();
    const viaA = await client(a);
    const viaB = await client(b);

    // Created through A; read, updated and cancelled through B.
    const created = await viaA.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
    const handle = String(created.response?.result?.taskId);
    assert.equal((await viaB.raw('tasks/get', { taskId: handle })).response?.result?.status, 'working');
    assert.equal((await viaB.raw('tasks/update', { taskId: handle, inputResponses: {} })).response?.result?.resultType, 'complete');
    assert.equal((await viaB.raw('tasks/cancel', { taskId: handle })).status, 200);

    // Polls alternating between A and B are governed as one client's.
    const polled = String((await viaA.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } })).response?.result?.taskId);
    modern.stats.reset();
    const started = Date.now();
    let allowed = 0;
    for (let i = 0; Date.now() - started < 2000; i++) {
      const answer = await (i % 2 === 0 ? viaA : viaB).raw('tasks/get', { taskId: polled });
      if (answer.status === 200) allowed++;
      else assert.equal(answer.status, 429);
      await sleep(50);
    }
    const bound = Math.ceil((Date.now() - started) / 500) + 1;
    assert.ok(allowed <= bound, `${allowed} polls allowed, at most ${bound} expected`);
    assert.ok(modern.stats.requests.filter((r) => r.rpcMethod === 'tasks/get').length <= bound);

    // 2025 tasks/list through B shows what was created through A.
    const legacyHandle = await createLegacyTask(a);
    assert.ok((await listLegacyTasks(b)).includes(legacyHandle));

    // A dies mid-task: B serves it.
    const midTask = String((await viaA.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } })).response?.result?.taskId);
    await a.stop('SIGKILL');
    assert.equal((await viaB.raw('tasks/get', { taskId: midTask })).response?.result?.status, 'working');

    // Both restart: the tasks are still there.
    await b.stop('SIGTERM');
    const a2 = await start();
    await start();
    const viaA2 = await client(a2);
    assert.equal((await viaA2.raw('tasks/get', { taskId: midTask })).response?.result?.taskId, midTask);
    assert.ok((await listLegacyTasks(a2)).includes(legacyHandle));
  });

  it('fails closed while Redis is away, keeps other traffic flowing, and recovers by itself', async () => {
    // A replica of its own: this test must not depend on what the one before left running.
    const gateway = await start();
    const reporting = await replicas.start(reportingPolicy);
    const viaG = await client(gateway);
    const handle = String((await viaG.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } })).response?.result?.taskId);
    const port = redis.port;
    await redis.stop();

    const refused = await viaG.raw('tasks/get', { taskId: handle });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '2');
    assert.equal(refused.response?.error?.code, -31004);
    // A backend that creates a task while the store is away: 503 to the client, and the task,
    // which no client could ever reach, cancelled upstream.
    const cancelsBefore = modern.stats.requests.filter((r) => r.rpcMethod === 'tasks/cancel').length;
    const orphan = await viaG.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
    assert.equal(orphan.status, 503);
    assert.equal(orphan.response?.error?.code, -31004);
    await sleep(200);
    assert.equal(modern.stats.requests.filter((r) => r.rpcMethod === 'tasks/cancel').length, cancelsBefore + 1);
    const plain = await viaG.raw('tools/call', { name: 'quick_echo', arguments: { text: 'still here' } }, { envelope: 'plain' });
    assert.equal(plain.status, 200, 'non-task traffic keeps flowing');
    const ready = await fetch(`${gateway.adminUrl}/readyz`);
    assert.equal(ready.status, 503);
    assert.equal(((await ready.json()) as { checks: { store: boolean } }).checks.store, false);
    // admin.readiness.store: reported keeps the replica in its Service and says why in the body;
    // its task operations still fail closed with taskgate's own answer.
    const stillReady = await fetch(`${reporting.adminUrl}/readyz`);
    assert.equal(stillReady.status, 200);
    assert.equal(((await stillReady.json()) as { checks: { store: boolean } }).checks.store, false);
    const viaReporting = await client(reporting);
    assert.equal((await viaReporting.raw('tasks/get', { taskId: handle })).response?.error?.code, -31004);

    redis = await RedisServerProcess.start(port);
    await waitUntilReady(gateway.adminUrl);
    // Redis came back empty (no persistence in this test): new work runs without a restart.
    const fresh = String((await viaG.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } })).response?.result?.taskId);
    assert.equal((await viaG.raw('tasks/get', { taskId: fresh })).response?.result?.status, 'working');
  });

  async function createLegacyTask(gateway: GatewayProcess): Promise<string> {
    const session = await openLegacySession(gateway);
    const res = await fetch(`${gateway.url}/legacy`, {
      method: 'POST',
      headers: session,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 60_000 } } }),
    });
    const [created] = (await readMessages(res)) as { result: { task: { taskId: string } } }[];
    return created!.result.task.taskId;
  }

  async function listLegacyTasks(gateway: GatewayProcess): Promise<string[]> {
    const session = await openLegacySession(gateway);
    const res = await fetch(`${gateway.url}/legacy`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tasks/list' }) });
    const body = (await res.json()) as { result: { tasks: Array<{ taskId: string }> } };
    return body.result.tasks.map((t) => t.taskId);
  }
});
