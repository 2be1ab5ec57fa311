/**
 * taskgate as a benchmark target: the real buildGateway in its own process, so that its CPU
 * time is its own and it can be pinned to a core. The policy comes validated from the harness
 * (BENCH_POLICY, JSON) and is parsed again here with the real config loader. The gateway is
 * the tsc build the harness made (BENCH_GATEWAY_DIR, dist/src): what `npm start` runs.
 *
 * Logs go to stdout, which the harness points at /dev/null: the per-request log line is part
 * of what an operator's gateway does, so it stays in the measurement.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as ConfigModule from '../src/config/index.js';
import type * as GatewayModule from '../src/gateway.js';
import type * as LoggerModule from '../src/observability/logger.js';
import type * as StoreModule from '../src/store/create-store.js';
import type * as HandleModule from '../src/tasks/handle.js';
import { announceReady, serveParentRequests } from './child-channel.js';
import { scaleHooks } from './scale-hooks.js';

const policy = process.env.BENCH_POLICY;
if (!policy) throw new Error('BENCH_POLICY is required');
const gatewayDir = process.env.BENCH_GATEWAY_DIR;
if (!gatewayDir) throw new Error('BENCH_GATEWAY_DIR (the compiled dist/src) is required');
const compiled = (path: string): string => pathToFileURL(join(gatewayDir, path)).href;

const { parseConfig } = (await import(compiled('config/index.js'))) as typeof ConfigModule;
const { buildGateway } = (await import(compiled('gateway.js'))) as typeof GatewayModule;
const { createLogger } = (await import(compiled('observability/logger.js'))) as typeof LoggerModule;
const { createStore } = (await import(compiled('store/create-store.js'))) as typeof StoreModule;
const { mintHandle } = (await import(compiled('tasks/handle.js'))) as typeof HandleModule;

const config = parseConfig(policy, { env: {}, source: 'bench-policy' });
const logger = createLogger(config.logging);

/**
 * The store the policy names, built the way an embedding does (passed as deps.store) and
 * awaited until connected; a Redis policy whose store cannot be built is reported to the
 * harness (storeProblem) rather than measured as memory.
 */
let storeProblem: string | undefined;
async function storeFromPolicy(): Promise<GatewayModule.GatewayDeps['store']> {
  if (config.store.type !== 'redis') return undefined;
  try {
    const store = createStore(config, logger);
    await (store as { whenReady?: () => Promise<void> }).whenReady?.();
    return store;
  } catch (error) {
    storeProblem = (error as Error).message.split('\n')[0];
    return undefined;
  }
}

const gateway = await buildGateway(config, { logger, store: await storeFromPolicy() });
const { url, adminUrl } = await gateway.listen();
// The store the gateway really uses: a Redis policy it ignored must not pass as Redis.
announceReady({ url: url.replace('localhost', '127.0.0.1'), adminUrl, store: gateway.store.kind, storeProblem });
/** Sum of a metric's values whose labels match `where`. */
async function total(metric: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> }, where: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(where).every(([k, want]) => v.labels[k] === want)).reduce((sum, v) => sum + v.value, 0);
}

serveParentRequests(
  () => gateway.close(),
  async () => ({
    tasksCreated: await total(gateway.metrics.tasksCreated),
    tasksExpired: await total(gateway.metrics.tasksForgotten, { reason: 'expired' }),
    pollsForwarded: await total(gateway.metrics.polls, { outcome: 'forwarded' }),
    pollsCached: await total(gateway.metrics.polls, { outcome: 'cached' }),
    providedRunning: await total(gateway.metrics.providedCallsRunning),
    backgroundDetached: await total(gateway.metrics.backgroundCalls, { outcome: 'detached' }),
    statusRunning: await total(gateway.metrics.backgroundStatusCalls, { answer: 'running' }),
    statusEnded: await total(gateway.metrics.backgroundStatusCalls, { answer: 'ended' }),
  }),
  // The scale curves put tasks in place through the store's own API (bench/scale-store.ts).
  scaleHooks(gateway.store, mintHandle, config.tasks.maxLivePerPrincipal),
);
