/**
 * Status push across two gateway processes sharing their own Redis: a listener on replica B is
 * told of the changes of a task whose backend call runs on replica A (TaskEvents over Pub/Sub),
 * and, with Redis killed and started again while the task ends, converges to the task's end on
 * the same stream, without reconnecting (the resync after a possible miss).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { startJwksServer, type JwksServer } from './support/harness.js';
import type { GatewayProcess } from './support/gateway-process.js';
import { Replicas, replicaStore } from './support/replica-harness.js';
import { listen, taskIn, type Listener } from './support/push-listener.js';
import { RedisServerProcess, redisServerOrReport } from '../support/redis-servers.js';

const installed = redisServerOrReport();

describe('status push on two replicas sharing Redis', { skip: !installed }, () => {
  let redis: RedisServerProcess;
  let dataDir: string;
  let modern: ModernTaskServer;
  let jwks: JwksServer;
  let policy: string;
  let a: GatewayProcess;
  let b: GatewayProcess;
  const listeners: Listener[] = [];
  const replicas = new Replicas(() => jwks);
  // Kept on disk (append-only, synced on every write), so a Redis killed and started again
  // comes back with the tasks: what is lost is only what Pub/Sub carried meanwhile.
  const startRedis = (port?: number) => RedisServerProcess.start(port, ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dataDir]);
  const listenOn = async (gateway: GatewayProcess, taskIds: string[]) => {
    const token = await jwks.mint({ sub: 'alice', aud: 'http://127.0.0.1/mcp' });
    const listener = await listen(`${gateway.url}/mcp`, `Bearer ${token}`, { taskIds });
    listeners.push(listener);
    return listener;
  };

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'taskgate-push-redis-'));
    redis = await startRedis();
    modern = await startModernTaskServer({ name: 'plain-2026', tasks: false });
    jwks = await startJwksServer({ algs: ['ES256'] });
    policy = await replicas.writePolicy('policy.yaml', {
      upstreams: { modern: { instances: [new URL(modern.url).origin], providedTasks: { tools: 'all', promoteAfter: '200ms' } } },
      routes: [{ path: '/mcp', upstream: 'modern' }],
      store: replicaStore(redis.port, 'tg-push:', { commandTimeout: '500ms' }),
      tasks: { poll: { default: '100ms' } },
    });
    a = await replicas.start(policy);
    b = await replicas.start(policy);
  });
  after(async () => {
    for (const listener of listeners) listener.close();
    await replicas.close();
    await Promise.allSettled([modern?.close(), jwks?.close(), redis?.stop()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('a listener on B is told of the completion of a task whose call runs on A', async () => {
    const viaA = await replicas.client(a);
    const taskId = String((await viaA.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 1 } })).response?.result?.taskId);
    const onB = await listenOn(b, [taskId]);
    await onB.waitFor(taskIn(taskId, 'working'), 5000, 'the current state');
    const done = await onB.waitFor(taskIn(taskId, 'completed'), 8000, 'the completion, from A');
    assert.match(JSON.stringify(done.params!.result), /Scan finished/);
    await onB.waitFor((m) => 'result' in m, 4000, 'the listen response');
  });

  it('converges on the same stream after Redis is killed and started again while the task ends', async () => {
    const viaA = await replicas.client(a);
    const taskId = String((await viaA.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 2.5 } })).response?.result?.taskId);
    const onB = await listenOn(b, [taskId]);
    await onB.waitFor(taskIn(taskId, 'working'), 5000, 'the current state');
    const port = redis.port;
    await redis.stop();
    // The call ends on A while Redis is away: A keeps the outcome and writes it once Redis is back.
    await sleep(3000);
    redis = await startRedis(port);
    const done = await onB.waitFor(taskIn(taskId, 'completed'), 20_000, 'the completion after the restart');
    assert.match(JSON.stringify(done.params!.result), /Scan finished/);
    assert.equal(onB.messages.filter((m) => m.method === 'notifications/subscriptions/acknowledged').length, 1, 'the same stream, never reopened');
  });
});
