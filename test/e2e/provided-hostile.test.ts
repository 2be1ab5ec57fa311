/**
 * Tasks the gateway runs itself, against hostile backends (issue #24, items 7 to 9): real SDK
 * servers (test/e2e/hostile-backends.ts) that call for themselves again forever, or answer with
 * megabytes the gateway would otherwise keep and serve, and the SDK 1.x example server behind a
 * proxy that is slow to take a cancel while the call's progress goes on. On the memory store
 * and on the shared Redis (under a key prefix of its own), since what a task keeps is what the
 * store holds.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import type { Store } from '../../src/store/store.js';
import { startBackendProxy, type BackendProxy } from './support/backend-proxy.js';
import { startGateway, testPolicy, type GatewayUnderTest, waitUntilReady } from './support/harness.js';
import { startHostileLegacyBackend, startHostileModernBackend, type HostileBackend } from './support/hostile-backends.js';
import { createModernTaskClient, type ModernTaskClient } from './support/modern-client.js';
import { createLegacyTask, waitForLegacyStatus, waitForModernStatus } from './support/task-waits.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { answersPing, redisConfig, SHARED_REDIS, sharedRedisSpace } from '../support/redis-servers.js';
import { waitFor } from '../support/wait.js';

/** Far below the 3 MB the backends send, far above anything the gateway writes of its own. */
const SMALL = 64 * 1024;
const CAP = /larger than tasks\.provided\.maxResultBytes \(1048576 bytes\)/;

const redisUp = await answersPing(SHARED_REDIS.port, SHARED_REDIS.host);
if (!redisUp) console.warn(`\n*** provided-hostile: Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port} is not answering; the Redis store variant is skipped\n`);
const stores = redisUp ? (['memory', 'redis'] as const) : (['memory'] as const);

type HostileGateway = GatewayUnderTest & { store: Store; keyPrefix: string; stop(): Promise<void> };

/**
 * A gateway in front of `backend`, every tool run as a task, on `storeKind`. stop() closes the
 * gateway alone (its Redis keys stay, for a look at what it left); close() also removes them.
 */
async function startGatewayFor(backend: { url: string }, storeKind: 'memory' | 'redis', options: { timeout?: string; drainTimeout?: string } = {}): Promise<HostileGateway> {
  const space = sharedRedisSpace();
  const store = storeKind === 'redis' ? space.storePolicy() : { type: 'memory' };
  const providedTasks = { tools: 'all', promoteAfter: '100ms', timeout: options.timeout ?? '3s' };
  const gw = await startGateway(
    testPolicy([backend.url], {
      upstreams: { tools: { instances: [new URL(backend.url).origin], cooldown: '30s', providedTasks } },
      tasks: { poll: { default: '100ms' }, ttl: { default: '30s' } },
      limits: { drainTimeout: options.drainTimeout ?? '10s' },
      store,
      audit: { stdout: false },
    }),
  );
  await waitUntilReady(gw.adminUrl);
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= gw.close());
  return {
    ...gw,
    store: gw.gateway.store,
    keyPrefix: space.keyPrefix,
    stop,
    async close() {
      await stop();
      if (storeKind === 'redis') await space.removeKeys();
    },
  };
}

/** What the store keeps of the task (record, state, poll snapshot) is small, whatever the backend sent. */
async function assertKeptSmall(store: Store, taskId: string): Promise<void> {
  const kept = JSON.stringify([await store.readProvidedTask(taskId), await store.readPollSnapshot(taskId)]);
  assert.ok(kept.length < SMALL, `the store keeps ${kept.length} bytes of the task`);
}

for (const storeKind of stores) {
  describe(`tasks the gateway runs, against a hostile 2026-07-28 backend (${storeKind} store)`, () => {
    let backend: HostileBackend;
    let gw: HostileGateway;
    let client: ModernTaskClient;
    before(async () => {
      backend = await startHostileModernBackend({ slowMs: 400 });
      gw = await startGatewayFor(backend, storeKind);
      client = await createModernTaskClient(gw.url);
    });
    after(async () => {
      await client?.close();
      await gw?.close();
      await backend?.close();
    });

    const startTask = async (tool: string): Promise<string> => {
      const created = await client.raw('tools/call', { name: tool, arguments: {} });
      assert.equal(created.response?.result?.resultType, 'task', JSON.stringify(created.response).slice(0, 300));
      return String(created.response?.result?.taskId);
    };
    const failedTask = async (taskId: string) => {
      await waitForModernStatus(client, taskId, 'failed', 8000);
      const polled = await client.raw('tasks/get', { taskId });
      const text = JSON.stringify(polled.response);
      assert.ok(text.length < SMALL, `tasks/get answered ${text.length} bytes`);
      return polled.response!.result!;
    };

    it('a backend that answers only a requestState, again and again, is called a bounded number of times, and the task fails once its timeout is spent', async () => {
      const taskId = await startTask('call_again');
      const failed = await failedTask(taskId);
      assert.match(String(failed.statusMessage), /did not finish within the task's timeout \(3000 ms/);
      assert.equal((failed.error as { code?: number }).code, -32603);
      const calls = backend.calls('call_again');
      // The bound is the round limit (101 calls); backing off, a 3 s budget holds a handful.
      assert.ok(calls >= 2 && calls <= 101, `the backend was called ${calls} times`);
    });

    it('counts each call made again as a round: past 100 rounds in all, the task fails, saying so', async () => {
      const before = backend.calls('call_again');
      const taskId = await startTask('call_again');
      // A hundred rounds behind it already (asked of the store, as a long-lived task would have
      // them): the backing off makes a hundred real ones take minutes.
      for (let written = false; !written; ) {
        const view = await gw.store.readProvidedTask(taskId);
        assert.ok(view && view.record.status === 'working', `the task is ${view?.record.status}`);
        written = await gw.store.writeProvidedTask(taskId, view.rev, {}, { ...view.state, round: 100 });
      }
      const failed = await failedTask(taskId);
      assert.match(String(failed.statusMessage), /the backend asked for more than 100 rounds/);
      assert.ok(backend.calls('call_again') - before <= 3, 'the task stopped at the bound');
    });

    it('a 3 MB JSON-RPC error ends the task failed, saying why, and nothing of it is kept', async () => {
      const taskId = await startTask('huge_error');
      const failed = await failedTask(taskId);
      assert.match(String(failed.statusMessage), /the backend's error \(\d+ bytes\) is /);
      assert.match(String(failed.statusMessage), CAP);
      assert.match((failed.error as { message: string }).message, CAP);
      await assertKeptSmall(gw.store, taskId);
    });

    it('3 MB of inputRequests end the task failed, saying why, and are neither kept nor served', async () => {
      const taskId = await startTask('huge_input');
      const failed = await failedTask(taskId);
      assert.match(String(failed.statusMessage), /the input the backend asks for \(\d+ bytes\) is /);
      assert.match(String(failed.statusMessage), CAP);
      assert.equal(failed.inputRequests, undefined);
      await assertKeptSmall(gw.store, taskId);
    });

    it('a 3 MB requestState ends the task failed, saying why, and is not kept', async () => {
      const taskId = await startTask('huge_state');
      const failed = await failedTask(taskId);
      assert.match(String(failed.statusMessage), CAP);
      await assertKeptSmall(gw.store, taskId);
    });
  });

  describe(`tasks the gateway runs, against a hostile 2025-11-25 backend (${storeKind} store)`, () => {
    let backend: HostileBackend;
    let gw: HostileGateway;
    let client: Client;
    before(async () => {
      backend = await startHostileLegacyBackend({ slowMs: 50 });
      gw = await startGatewayFor(backend, storeKind);
      client = new Client({ name: 'hostile-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    });
    after(async () => {
      await client?.close();
      await gw?.close();
      await backend?.close();
    });

    /** tasks/result of a failed task: the JSON-RPC error it answers with. */
    const resultError = async (taskId: string): Promise<McpError> => {
      const error = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema).catch((e: unknown) => e);
      assert.ok(error instanceof McpError, String(error));
      return error;
    };

    it('a 3 MB question in the call ends the task failed, saying why, and is neither kept nor relayed', async () => {
      const task = await createLegacyTask(client, 'huge_question');
      const failed = await waitForLegacyStatus(client, task.taskId, 'failed', 5000);
      assert.match(failed.statusMessage ?? '', /the backend's questions \(\d+ bytes\) are /);
      assert.match(failed.statusMessage ?? '', CAP);
      const error = await resultError(task.taskId);
      assert.match(error.message, CAP);
      await assertKeptSmall(gw.store, task.taskId);
    });

    it('a 3 MB JSON-RPC error ends the task failed, saying why, and nothing of it is kept', async () => {
      const task = await createLegacyTask(client, 'huge_error');
      const failed = await waitForLegacyStatus(client, task.taskId, 'failed', 5000);
      assert.match(failed.statusMessage ?? '', CAP);
      const error = await resultError(task.taskId);
      assert.ok(error.message.length < SMALL);
      assert.match(error.message, CAP);
      await assertKeptSmall(gw.store, task.taskId);
    });
  });
}

for (const storeKind of stores) {
  describe(`tasks the gateway runs: a task that ended never changes (${storeKind} store)`, () => {
    let legacy: ExampleServer;
    let proxy: BackendProxy;
    let gw: HostileGateway;
    let client: Client;
    before(async () => {
      legacy = await startExampleServer({ name: 'progress-2025', tasks: false });
      // A backend slow to take a cancel: the gateway waits a second for it, while the call's
      // progress keeps coming on the call's stream.
      proxy = await startBackendProxy(legacy.url, { delayFor: (method) => (method === 'notifications/cancelled' ? 1500 : 0) });
      gw = await startGatewayFor(proxy, storeKind);
      client = new Client({ name: 'terminal-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    });
    after(async () => {
      await client?.close();
      await gw?.close();
      await proxy?.close();
      await legacy?.close();
    });

    const lastStep = () => Math.max(0, ...[...proxy.relayed().matchAll(/step (\d+) of 100/g)].map((m) => Number(m[1])));
    const until = (what: string, condition: () => Promise<boolean> | boolean) => waitFor(condition, what, 5000);

    it('progress after a cancel changes neither its statusMessage nor its lastUpdatedAt', async () => {
      const task = await createLegacyTask(client, 'slow_report', { seconds: 2.5, steps: 100 });
      await until('a progress statusMessage', async () => /^step/.test((await client.experimental.tasks.getTask(task.taskId)).statusMessage ?? ''));
      const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
      assert.equal(cancelled.status, 'cancelled');
      const stepAtCancel = lastStep();
      // The events that would show a late write: the call's progress went on after the cancel,
      // the gateway cut the call, and its driver stopped (a progress write comes from it only).
      await until('the call being cut', () => legacy.stats.aborted > 0);
      await until('the driver stopping', async () => /taskgate_provided_calls_running 0\b/.test(await (await fetch(`${gw.adminUrl}/metrics`)).text()));
      assert.ok(lastStep() >= stepAtCancel + 10, `progress went on after the cancel (step ${stepAtCancel} → ${lastStep()})`);
      const now = await client.experimental.tasks.getTask(task.taskId);
      assert.equal(now.status, 'cancelled');
      assert.equal(now.statusMessage, cancelled.statusMessage);
      assert.equal(now.lastUpdatedAt, cancelled.lastUpdatedAt);
    });
  });
}

describe('tasks the gateway runs: a shutdown while a task pauses before its call is made again (redis store)', { skip: !redisUp }, () => {
  let backend: HostileBackend;
  let gw: HostileGateway;
  let client: ModernTaskClient;
  let reader: RedisStore | undefined;
  before(async () => {
    backend = await startHostileModernBackend({ slowMs: 400 });
    gw = await startGatewayFor(backend, 'redis', { timeout: '60s', drainTimeout: '200ms' });
    client = await createModernTaskClient(gw.url);
  });
  after(async () => {
    await client?.close();
    await reader?.close();
    await gw?.close();
    await backend?.close();
  });

  it('ends the task failed, saying the gateway shut down, within the drain time', async () => {
    const created = await client.raw('tools/call', { name: 'call_again', arguments: {} });
    const taskId = String(created.response?.result?.taskId);
    // From the fourth call on the pause (800 ms, then longer) outlasts the drain time.
    await waitFor(() => backend.calls('call_again') >= 4, 'the backend to be called again', 5000);
    await gw.stop();
    // Read as another replica would, from what the gateway left in Redis.
    reader = new RedisStore(redisConfig({ url: `redis://${SHARED_REDIS.host}:${SHARED_REDIS.port}`, keyPrefix: gw.keyPrefix }));
    await reader.whenReady();
    const view = await reader.readProvidedTask(taskId);
    assert.equal(view?.record.status, 'failed');
    assert.equal(view?.record.statusMessage, 'the gateway shut down before the backend answered');
  });
});
