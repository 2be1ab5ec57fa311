/**
 * The proof that a policy reload does not disturb traffic (issue #19): real SDK 1.x clients,
 * each its own principal, call tools, create tasks and poll them to completion through the
 * gateway while the policy is reloaded 20 times: routes, task policy, logging level, a second
 * issuer, new upstream timeouts (new agents), an instance removed and one added, and invalid
 * files in between. Every request the clients make is allowed by the policies before and
 * after each reload, so none may fail; and at the end every task is still reachable by its
 * owner, including the long ones on the removed instance.
 *
 * Bounds are generous and nothing asserts on wall-clock time: the machine may be loaded.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import type { Config } from '../../src/config/index.js';
import { startJwksServer, type JwksServer, metricSample } from './support/harness.js';
import { legacyClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { taskStackPolicy, watchReadiness } from './support/reload-harness.js';
import { waitFor } from '../support/wait.js';

const CLIENTS = 6;
const RELOADS = 20;

interface OwnedTask {
  readonly owner: number;
  readonly taskId: string;
}

interface LoadStats {
  requests: number;
  failures: string[];
  tasks: OwnedTask[];
}

async function createTask(client: Client, seconds: number): Promise<string> {
  const created = await client.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds }, task: { ttl: 120_000 } } }, CreateTaskResultSchema);
  return created.task.taskId;
}

/** One client's traffic until `stopped`: a tool call, then a task created and polled, at its interval, to its result. */
async function runClient(client: Client, owner: number, stopped: () => boolean, stats: LoadStats): Promise<void> {
  const step = async <T>(what: string, run: () => Promise<T>): Promise<T | undefined> => {
    stats.requests += 1;
    try {
      return await run();
    } catch (error) {
      stats.failures.push(`client ${owner} ${what}: ${String(error)}`);
      return undefined;
    }
  };
  for (let round = 0; !stopped(); round++) {
    await step('echo', () => client.callTool({ name: 'echo', arguments: { text: `r${round}` } }));
    const taskId = await step('create', () => createTask(client, 0.3));
    if (!taskId) continue;
    stats.tasks.push({ owner, taskId });
    for (let polls = 0; polls < 200; polls++) {
      const task = await step('tasks/get', () => client.experimental.tasks.getTask(taskId));
      if (!task || task.status === 'completed') break;
      await sleep(Math.max(task.pollInterval ?? 200, 200));
    }
    await step('tasks/result', () => client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema));
  }
}

describe('policy reloads under steady load', () => {
  let stack: TaskStack;
  let added: ExampleServer;
  let secondIssuer: JwksServer;
  let dir: string;
  const clients: Client[] = [];

  before(async () => {
    // The audit trail is not what this test is about; it would fill the test's output.
    const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
    stack = await startTaskStack({ era: 'legacy', count: 3, tasks: { ttl: { max: '5m' } }, gatewayDeps: { auditDestination: discard } });
    added = await startExampleServer({ name: 'legacy-added' });
    secondIssuer = await startJwksServer({ algs: ['ES256'] });
    dir = await mkdtemp(join(tmpdir(), 'taskgate-reload-load-'));
    for (let i = 0; i < CLIENTS; i++) clients.push(await legacyClient(stack, `owner-${i}`));
  });
  after(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await stack?.close();
    await added?.close();
    await secondIssuer?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fails no request and loses no task across 20 reloads, invalid files and an instance removal among them', async (t) => {
    const [a, b, c] = stack.backends.map((backend) => backend.url);
    const issuers = (second: boolean) => [
      { issuer: stack.jwks.issuer, jwksUri: stack.jwks.url },
      ...(second ? [{ issuer: secondIssuer.issuer, jwksUri: secondIssuer.url }] : []),
    ];
    const policy = (overrides: { instances?: string[]; second?: boolean; routes?: boolean; level?: string; tolerance?: string; headers?: string } = {}): Config => {
      const instances = (overrides.instances ?? [a!, b!, c!]).map((url) => new URL(url).origin);
      return taskStackPolicy(stack, {
        auth: { mode: 'jwt', issuers: issuers(overrides.second ?? false) },
        upstreams: { tools: { instances, cooldown: '30s', timeouts: { headers: overrides.headers ?? '30s' } } },
        routes: [{ path: '/mcp', upstream: 'tools', upstreamPath: '/mcp' }, ...(overrides.routes ? [{ path: '/extra', upstream: 'tools', upstreamPath: '/mcp' }] : [])],
        tasks: { ttl: { max: '5m' }, poll: { tolerance: overrides.tolerance ?? '50ms' } },
        logging: { level: overrides.level ?? 'silent' },
      });
    };
    const invalidFile = join(dir, 'invalid.yaml');
    await writeFile(invalidFile, 'publicUrl: http://127.0.0.1\nauth: { mode: jwt }\nupstreams: {}\nroutes: [{ path: /mcp, upstream: gone }]\n');
    // Each step: a valid policy to apply, or 'invalid' for the broken file. Instance c is removed at step 6.
    const removed = [a!, b!];
    const steps: Array<Config | 'invalid'> = [
      policy({ routes: true }),
      policy({ routes: true, tolerance: '80ms' }),
      'invalid',
      policy({ routes: true, tolerance: '80ms', second: true }),
      policy({ tolerance: '80ms', second: true, headers: '25s' }),
      policy({ instances: removed, tolerance: '80ms', second: true, headers: '25s' }),
      'invalid',
      policy({ instances: removed, second: true, headers: '25s', level: 'error' }),
      policy({ instances: removed, second: true, headers: '25s' }),
      policy({ instances: removed, headers: '25s' }),
      policy({ instances: removed, headers: '20s' }),
      'invalid',
      policy({ instances: [...removed, added.url], headers: '20s' }),
      policy({ instances: [...removed, added.url], headers: '20s', routes: true }),
      policy({ instances: [...removed, added.url], headers: '20s', tolerance: '60ms' }),
      'invalid',
      policy({ instances: [...removed, added.url], tolerance: '60ms' }),
      policy({ instances: [...removed, added.url], tolerance: '60ms', second: true }),
      policy({ instances: [...removed, added.url], second: true, routes: true }),
      policy({ instances: [...removed, added.url] }),
    ];
    assert.equal(steps.length, RELOADS);

    // Long tasks on every instance, the one to be removed included, to be found again at the end.
    const stats: LoadStats = { requests: 0, failures: [], tasks: [] };
    for (const [owner, client] of clients.entries()) stats.tasks.push({ owner, taskId: await createTask(client, 60) });
    const readiness = watchReadiness(stack.gw.adminUrl);
    let stopped = false;
    const load = clients.map((client, owner) => runClient(client, owner, () => stopped, stats));

    const outcomes: string[] = [];
    const reloadMs: number[] = [];
    let mostDraining = 0;
    for (const step of steps) {
      await sleep(300);
      const started = process.hrtime.bigint();
      const result = step === 'invalid' ? await stack.gw.gateway.reloadFile(invalidFile) : await stack.gw.gateway.reload(step);
      reloadMs.push(Number(process.hrtime.bigint() - started) / 1e6);
      outcomes.push(result!.outcome);
      mostDraining = Math.max(mostDraining, (await metricSample(stack.gw.adminUrl, 'taskgate_config_draining_policies')) ?? 0);
    }
    await sleep(500);
    stopped = true;
    await Promise.all(load);
    const statuses = await readiness.stop();

    assert.deepEqual(stats.failures, [], `${stats.failures.length} of ${stats.requests} requests failed`);
    assert.deepEqual(outcomes, steps.map((step) => (step === 'invalid' ? 'invalid' : 'applied')));
    assert.ok(stats.requests >= CLIENTS * 10, `only ${stats.requests} requests were made under load`);
    assert.ok(statuses.every((s) => s === 200), `/readyz answered ${[...new Set(statuses)].join(', ')}`);

    // Every task, by its owner: the short ones ended, the long ones (one of them on the removed instance) still run.
    for (const { owner, taskId } of stats.tasks) {
      const task = await clients[owner]!.experimental.tasks.getTask(taskId);
      assert.ok(['working', 'completed'].includes(task.status), `task of client ${owner} is ${task.status}`);
    }
    const removedBackend = stack.backends[2]!;
    assert.ok(removedBackend.stats.requests.some((r) => r.rpcMethod === 'tasks/get'), 'tasks on the removed instance were polled there');

    const sorted = [...reloadMs].sort((x, y) => x - y);
    t.diagnostic(
      `${stats.requests} requests, ${stats.tasks.length} tasks, ${RELOADS} reloads; reload time median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, ` +
        `max ${sorted.at(-1)!.toFixed(1)} ms; at most ${mostDraining} replaced policies still draining`,
    );
  });

  it('closes every replaced policy once the clients that held them are gone', async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await waitFor(async () => (await metricSample(stack.gw.adminUrl, 'taskgate_config_draining_policies')) === 0, 'every replaced policy to close');
  });
});
