/**
 * Background calls on two gateway processes sharing one Redis: a call detached by one replica
 * is checked, answered and cancelled through the other (which does not hold the call), in both
 * eras; another principal gets the unknown-handle answer there too; a result nobody read is
 * counted abandoned by whichever replica's sweep forgets it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { viewOf } from './support/background-agent.js';
import type { GatewayProcess } from './support/gateway-process.js';
import { startJwksServer, type JwksServer } from './support/harness.js';
import { Replicas, replicaStore } from './support/replica-harness.js';
import { RedisServerProcess, redisServerOrReport } from '../support/redis-servers.js';
import { waitFor, waitForValue } from '../support/wait.js';

const installed = redisServerOrReport();

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const TIMEOUT_MS = 1500;

interface ToolClient {
  call(name: string, args: Record<string, unknown>): Promise<{ content?: unknown; isError?: boolean; _meta?: Record<string, unknown> }>;
  close(): Promise<void>;
}

describe('background calls on two replicas sharing Redis', { skip: !installed }, () => {
  let redis: RedisServerProcess;
  let modern: ModernTaskServer;
  let legacy: ExampleServer;
  let jwks: JwksServer;
  let policy: string;
  const replicas = new Replicas(() => jwks);
  const clients: ToolClient[] = [];

  const headersFor = async (path: string, subject: string) => ({ authorization: `Bearer ${await jwks.mint({ sub: subject, aud: `http://127.0.0.1${path}` })}` });
  async function legacyClient(gateway: GatewayProcess, subject = 'alice'): Promise<ToolClient> {
    const client = new LegacyClient({ name: 'bg-2025', version: '1.0.0' });
    await client.connect(new LegacyTransport(new URL(`${gateway.url}/legacy`), { requestInit: { headers: await headersFor('/legacy', subject) } }));
    await client.listTools();
    const wrapped = { call: (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }, undefined, { timeout: TIMEOUT_MS }), close: () => client.close() };
    clients.push(wrapped);
    return wrapped;
  }
  async function modernClient(gateway: GatewayProcess, subject = 'alice'): Promise<ToolClient> {
    const client = new ModernClient({ name: 'bg-2026', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new ModernTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: await headersFor('/mcp', subject) } }));
    await client.listTools();
    const wrapped = { call: (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }, { timeout: TIMEOUT_MS }), close: () => client.close() };
    clients.push(wrapped);
    return wrapped;
  }
  const detach = async (client: ToolClient, name: string, args: Record<string, unknown>) => {
    const result = await client.call(name, args);
    const handle = (result._meta?.[RELATED_TASK] as { taskId?: string } | undefined)?.taskId;
    assert.ok(handle, `detached: ${JSON.stringify(result)}`);
    return handle;
  };
  const untilEnded = async (client: ToolClient, handle: string) => {
    for (let i = 0; i < 60; i++) {
      const view = viewOf(await client.call('taskgate_task_status', { taskId: handle }));
      if (!/still running/.test(view.text)) return view;
    }
    assert.fail('the background call did not end');
  };

  before(async () => {
    redis = await RedisServerProcess.start();
    modern = await startModernTaskServer({ name: 'plain-2026', tasks: false });
    legacy = await startExampleServer({ name: 'plain-2025', tasks: false });
    jwks = await startJwksServer({ algs: ['ES256'] });
    const backgroundCalls = { tools: 'all', detachAfter: '300ms', statusWait: '700ms' };
    policy = await replicas.writePolicy('policy.yaml', {
      upstreams: {
        modern: { instances: [new URL(modern.url).origin], backgroundCalls },
        legacy: { instances: [new URL(legacy.url).origin], backgroundCalls },
      },
      routes: [
        { path: '/mcp', upstream: 'modern' },
        { path: '/legacy', upstream: 'legacy', upstreamPath: '/mcp' },
      ],
      store: replicaStore(redis.port, 'tg-background:'),
      tasks: { poll: { default: '200ms' }, tools: { notify_progress: { maxTtl: '1500ms' } } },
    });
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await replicas.close();
    await Promise.allSettled([modern?.close(), legacy?.close(), jwks?.close(), redis?.stop()]);
  });

  it('2025: detached through A, answered through B; a call A holds cancelled through B', async () => {
    const a = await replicas.start(policy);
    const b = await replicas.start(policy);
    const viaA = await legacyClient(a);
    const viaB = await legacyClient(b);
    const handle = await detach(viaA, 'slow_report', { seconds: 2, steps: 1 });
    assert.deepEqual(await untilEnded(viaB, handle), { text: 'Report ready after 2s', isError: false });

    legacy.stats.reset();
    const long = await detach(viaA, 'slow_report', { seconds: 30, steps: 1 });
    assert.match(viewOf(await viaB.call('taskgate_task_cancel', { taskId: long })).text, /is cancelled/);
    await waitFor(() => legacy.stats.cancelled > 0, 'the backend to see the call cancelled', 3000, 30);
    assert.equal(legacy.stats.cancelled, 1, 'A stopped the call when B cancelled it');
    assert.match(viewOf(await viaA.call('taskgate_task_status', { taskId: long })).text, /was cancelled/);
  });

  it('2026: detached through A, answered through B; a call A holds cancelled through B', async () => {
    const [a, b] = replicas.running.slice(-2) as [GatewayProcess, GatewayProcess];
    const viaA = await modernClient(a);
    const viaB = await modernClient(b);
    const handle = await detach(viaA, 'slow_scan', { seconds: 2 });
    assert.deepEqual(await untilEnded(viaB, handle), { text: 'Scan finished after 2s', isError: false });

    modern.stats.reset();
    const long = await detach(viaA, 'slow_scan', { seconds: 30 });
    assert.match(viewOf(await viaB.call('taskgate_task_cancel', { taskId: long })).text, /is cancelled/);
    await waitFor(() => modern.stats.aborted > 0, 'the backend to see the call closed', 3000, 30);
    assert.equal(modern.stats.aborted, 1, 'A closed the call when B cancelled it');
  });

  it('another principal gets the unknown-handle answer through either replica', async () => {
    const [a, b] = replicas.running.slice(-2) as [GatewayProcess, GatewayProcess];
    const handle = await detach(await legacyClient(a), 'slow_report', { seconds: 1, steps: 1 });
    const bob = await legacyClient(b, 'bob');
    const unknown = await bob.call('taskgate_task_status', { taskId: 'C'.repeat(32), wait: 0 });
    assert.equal(unknown.isError, true);
    assert.deepEqual(await bob.call('taskgate_task_status', { taskId: handle, wait: 0 }), unknown);
    assert.deepEqual(await bob.call('taskgate_task_cancel', { taskId: handle }), unknown);
  });

  it('a result nobody read is forgotten at the end of its lifetime and counted abandoned', async () => {
    const [a, b] = replicas.running.slice(-2) as [GatewayProcess, GatewayProcess];
    const handle = await detach(await legacyClient(a), 'notify_progress', { count: 3, delayMs: 1000 });
    // Not asked about until its lifetime (tools.notify_progress.maxTtl) ended: one of the
    // replicas' sweeps forgets it, and that replica counts it.
    const abandoned = await waitForValue(async () => (await abandonedOn(a)) + (await abandonedOn(b)) || undefined, 'a replica to count the call abandoned', 10_000, 100);
    assert.equal(abandoned, 1);
    const viaB = await legacyClient(b);
    assert.match(viewOf(await viaB.call('taskgate_task_status', { taskId: handle, wait: 0 })).text, /No background call with this handle is known/);
  });

  async function abandonedOn(gateway: GatewayProcess): Promise<number> {
    const text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('taskgate_background_calls_total{') && l.includes('outcome="abandoned"'));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  }
});
