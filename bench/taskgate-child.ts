/**
 * taskgate as a benchmark target: the real buildGateway in its own process, so that its CPU
 * time is its own and it can be pinned to a core. The policy comes validated from the harness
 * (BENCH_POLICY, JSON) and is parsed again here with the real config loader.
 *
 * Logs go to stdout, which the harness points at /dev/null: the per-request log line is part
 * of what an operator's gateway does, so it stays in the measurement.
 */
import { parseConfig } from '../src/config/index.js';
import { buildGateway, type GatewayDeps } from '../src/gateway.js';
import { createLogger } from '../src/observability/logger.js';
import { announceReady, serveParentRequests } from './child-channel.js';

const policy = process.env.BENCH_POLICY;
if (!policy) throw new Error('BENCH_POLICY is required');

const config = parseConfig(policy, { env: {}, source: 'bench-policy' });
const logger = createLogger(config.logging);

/**
 * The store the policy names, built the way an embedding does (src/store/create-store.ts, passed
 * as deps.store) for as long as buildGateway does not build it from the policy itself. Loaded by
 * a computed specifier: the Redis store is being written, and a harness that failed to compile
 * without it would measure nothing. Undefined means buildGateway's own choice.
 */
let storeProblem: string | undefined;
async function storeFromPolicy(): Promise<GatewayDeps['store']> {
  const wanted = (config as { store?: { type?: string } }).store?.type;
  if (wanted !== 'redis') return undefined;
  const specifier = '../src/store/create-store.js';
  try {
    const module = (await import(specifier)) as { createStore?: (c: unknown, l: unknown) => GatewayDeps['store'] };
    const store = module.createStore?.(config, logger);
    await (store as { whenReady?: () => Promise<void> } | undefined)?.whenReady?.();
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
serveParentRequests(() => gateway.close());
