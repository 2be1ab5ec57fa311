/**
 * The targets, all in front of the same backend process: the backend itself (the floor),
 * nginx, a plain fastify passthrough, and taskgate with each store. Each proxy is its own
 * process on the proxy core, so its CPU time is its own.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { parseConfig } from '../src/config/index.js';
import { delay, REPO_ROOT, spawnPinned, startNodeChild, type NodeChild, type Pinning } from './children.js';
import type { CpuReply, GatewayCounters, MemoryReply } from './child-channel.js';
import type { BenchIssuer } from './jwks.js';
import { processCpuUs } from './machine.js';
import { freePort, hasCommand, startNginx, waitForPort } from './nginx.js';

export const TARGET_NAMES = ['direct', 'nginx', 'fastify', 'taskgate-memory', 'taskgate-redis'] as const;
/**
 * Started only by `--tracing RATIO`: taskgate on the memory store with tracing on, measured in
 * the same rounds as taskgate-memory (tracing off), so the two are compared under the same load.
 */
export const TRACED_TARGET = 'taskgate-traced';
export type TargetName = (typeof TARGET_NAMES)[number] | typeof TRACED_TARGET;

export const TARGET_LABELS: Record<TargetName, string> = {
  direct: 'backend direct (floor)',
  nginx: 'nginx reverse proxy',
  fastify: 'fastify + @fastify/http-proxy',
  'taskgate-memory': 'taskgate, memory store',
  'taskgate-redis': 'taskgate, redis store',
  [TRACED_TARGET]: 'taskgate, memory store, tracing on (--tracing)',
};

export interface Target {
  readonly name: TargetName;
  /** The MCP endpoint the load goes to. */
  readonly url: string;
  readonly isTaskgate: boolean;
  /** How proxy CPU is read; undefined for the backend itself. */
  readonly cpuMethod?: string;
  /** PIDs of every process of this target, for the foreign-load accounting. */
  pids(): number[];
  /** CPU microseconds the proxy process(es) used so far. */
  cpuUs(): Promise<number | undefined>;
  memory?(gc: boolean): Promise<MemoryReply>;
  /** taskgate's own counters (tasks created, polls by outcome, provided calls held). */
  counters?(): Promise<GatewayCounters>;
  readonly child?: NodeChild;
  stop(): Promise<void>;
}

export interface Skipped {
  name: TargetName;
  reason: string;
}

export interface TaskgatePolicyOptions {
  backendUrl: string;
  issuer: BenchIssuer;
  store?: Record<string, unknown>;
  /** Tracing on at this sampling ratio, exporting to the backend's collector (bench/backend.ts). */
  tracingRatio?: number;
  /** The gateway runs the backend's `slow` tool as a task (bench/provided.ts). */
  provided?: ProvidedPolicyOptions;
}

/** The taskgate route (and backend path) whose backend serves 2026-07-28 tasks only. */
export const BRIDGED_PATH = '/bridged';

/** The tool the provided-task policy names: the bench backend's plain `slow` tool. */
export const PROVIDED_TOOL = 'slow';

export interface ProvidedPolicyOptions {
  /**
   * tasks.poll.default: the interval a provided task gets (its backend gives none). 0s makes
   * every poll on time (answered from the store), 1h every poll after the first early (cached).
   */
  pollDefault: string;
  /** upstreams.bench.connections: sockets per instance; calls beyond them queue inside undici. */
  connections: number;
  /** tasks.provided.maxRunning: backend calls held at once before a creation is refused. */
  maxRunning: number;
  /**
   * Background calls in place of provided tasks (bench/background.ts): a `slow` call from a client
   * without tasks still running after this is answered with a handle (backgroundCalls.detachAfter).
   */
  detachAfter?: string;
}

/** The status tool background calls add (backgroundCalls.toolNames.status, its default). */
export const STATUS_TOOL = 'taskgate_task_status';

/**
 * The policy under test. Poll governance stays on (mode cached) with the default tolerance and
 * floor 0: polls of tasks whose backend interval is 0 are forwarded, early polls of tasks with
 * a one-hour interval are answered from the cache. The abuse limit, the per-principal live task
 * limit and creation rate are raised so that load itself never trips them (they are still
 * evaluated on every request, so their cost is measured).
 */
export function taskgatePolicy(options: TaskgatePolicyOptions): string {
  const provided = options.provided;
  return JSON.stringify(patchPolicy({
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    publicUrl: 'http://127.0.0.1',
    auth: { mode: 'jwt', issuers: [{ issuer: options.issuer.issuer, jwksUri: options.issuer.jwksUri }] },
    // The main route's backend is probed as serving no tasks (bridge off keeps the probes out of
    // its counters); /bridged serves 2026 tasks only, so its 2025 clients are bridged (bench/backend.ts).
    upstreams: {
      bench: provided ? providedUpstream(options.backendUrl, provided) : { instances: [options.backendUrl], bridge: 'off' },
      ...(provided ? {} : { bridged: { instances: [options.backendUrl] } }),
    },
    routes: [{ path: '/mcp', upstream: 'bench' }, ...(provided ? [] : [{ path: BRIDGED_PATH, upstream: 'bridged' }])],
    tasks: {
      maxLivePerPrincipal: 10_000_000,
      maxRecords: 10_000_000,
      createRate: { limit: 1_000_000_000, window: '1m' },
      poll: { mode: 'cached', floor: '0s', abuseFactor: 1_000_000_000, ...(provided ? { default: provided.pollDefault } : {}) },
      // A 2026 provided task lives ttl.default (10m by default): the polled ones outlive the run.
      ...(provided ? { ttl: { default: '1h' }, provided: { maxRunning: provided.maxRunning } } : {}),
    },
    ...(options.store ? { store: options.store } : {}),
    logging: { level: 'info' },
    ...(options.tracingRatio === undefined
      ? {}
      : { tracing: { mode: 'otlp', endpoint: `${options.backendUrl}/v1/traces`, sampling: { ratio: options.tracingRatio } } }),
  }));
}

/**
 * The upstream with provided tasks: the `slow` tool runs as a task; a 2026 call becomes one
 * after 1 ms (the CPU of a promotion does not depend on the wait, and a longer one would hold
 * each client request that long); its call may last the task's hour. With `detachAfter`, the
 * `slow` tool's calls become background calls instead (no providedTasks: the two are
 * independent, docs/background-calls.md), with the default outputSchema and statusWait.
 */
function providedUpstream(backendUrl: string, provided: ProvidedPolicyOptions): Record<string, unknown> {
  return {
    instances: [backendUrl],
    bridge: 'off',
    connections: provided.connections,
    ...(provided.detachAfter === undefined
      ? { providedTasks: { tools: [PROVIDED_TOOL], promoteAfter: '1ms', timeout: '1h' } }
      : { backgroundCalls: { tools: [PROVIDED_TOOL], detachAfter: provided.detachAfter, timeout: '1h' } }),
  };
}

/**
 * BENCH_POLICY_PATCH (a JSON object) replaces whole top-level sections of the policy: for
 * finding what one part costs (`{"logging":{"level":"warn"}}` takes the per-request log line
 * away, `{"auth":{"mode":"none"}}` the token check). A patched run measures another gateway,
 * so its numbers never go into docs/benchmarks.md.
 */
export function patchPolicy(policy: Record<string, unknown>, patchText = process.env.BENCH_POLICY_PATCH): Record<string, unknown> {
  if (!patchText) return policy;
  const patch: unknown = JSON.parse(patchText);
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new Error(`BENCH_POLICY_PATCH must be a JSON object, not ${patchText}`);
  return { ...policy, ...patch };
}

/** Why a policy does not validate, or undefined when it does. */
export function policyProblem(policy: string): string | undefined {
  try {
    parseConfig(policy, { env: {}, source: 'bench-policy' });
    return undefined;
  } catch (error) {
    return (error as Error).message.replace(/\s+/g, ' ').trim();
  }
}

export async function waitUntilReady(adminUrl: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${adminUrl}/readyz`).catch(() => undefined);
    await res?.text();
    if (res?.status === 200) return;
    if (Date.now() > until) throw new Error('taskgate not ready in time');
    await delay(25);
  }
}

function nodeTarget(name: TargetName, child: NodeChild, path: string, extraStop?: () => Promise<void>): Target {
  return {
    name,
    url: `${child.url}${path}`,
    isTaskgate: name.startsWith('taskgate'),
    cpuMethod: 'process.cpuUsage() over IPC',
    child,
    pids: () => [child.pid],
    cpuUs: async () => {
      const cpu = await child.ask<CpuReply>('cpu');
      return cpu.userUs + cpu.systemUs;
    },
    memory: (gc) => child.ask<MemoryReply>('memory', { gc }),
    counters: () => child.ask<GatewayCounters>('counters'),
    async stop() {
      await child.stop();
      await extraStop?.();
    },
  };
}

export function directTarget(backend: NodeChild): Target {
  return { name: 'direct', url: `${backend.url}/mcp`, isTaskgate: false, pids: () => [], cpuUs: async () => undefined, stop: async () => {} };
}

export async function startNginxTarget(pinning: Pinning, backendUrl: string): Promise<Target> {
  const nginx = await startNginx(pinning, backendUrl);
  return {
    name: 'nginx',
    url: nginx.url,
    isTaskgate: false,
    cpuMethod: '/proc/<pid>/stat utime+stime (master + worker)',
    pids: () => nginx.pids(),
    cpuUs: async () => processCpuUs(nginx.pids()),
    stop: () => nginx.stop(),
  };
}

export async function startFastifyTarget(pinning: Pinning, backendUrl: string, execArgv: string[] = []): Promise<Target> {
  const child = await startNodeChild(pinning, './passthrough.ts', { cpu: pinning.proxyCpu, env: { BENCH_UPSTREAM: backendUrl }, execArgv });
  return nodeTarget('fastify', child, '/mcp');
}

/** An empty fastify route answering every POST itself (bench/empty-route.ts), for bench/profile.ts only. */
export async function startEmptyRouteTarget(pinning: Pinning, execArgv: string[] = []): Promise<Target> {
  const child = await startNodeChild(pinning, './empty-route.ts', { cpu: pinning.proxyCpu, execArgv });
  return nodeTarget('fastify', child, '/mcp');
}

let compiledGateway: string | undefined;

/**
 * The gateway as operators run it (`npm start`): compiled by tsc into dist/, once per harness
 * process. Loaded from src/ under tsx it would be esbuild's output instead, which wraps every
 * function made at run time (several per request) in a `__name` call, and which no operator runs.
 * BENCH_BUILD_DIR (under dist/, so that node_modules resolve) compiles elsewhere than dist/src, so
 * that two harnesses at once (the two smoke tests) never write over each other's gateway.
 */
export function buildGateway(): string {
  if (compiledGateway) return compiledGateway;
  const outDir = join(REPO_ROOT, process.env.BENCH_BUILD_DIR ?? 'dist');
  const tsc = spawnSync(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(REPO_ROOT, 'tsconfig.build.json'), '--outDir', outDir], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed; the benchmark measures the compiled gateway\n${tsc.stdout}${tsc.stderr}`);
  compiledGateway = join(outDir, 'src');
  return compiledGateway;
}

export async function startTaskgate(pinning: Pinning, name: TargetName, policy: string, execArgv: string[] = []): Promise<Target> {
  const env = { BENCH_POLICY: policy, BENCH_GATEWAY_DIR: buildGateway() };
  const child = await startNodeChild(pinning, './taskgate-child.ts', { cpu: pinning.proxyCpu, env, execArgv });
  await waitUntilReady(String(child.details.adminUrl));
  return nodeTarget(name, child, '/mcp');
}

/** A redis-server for the Redis rows: private to the run, or the one TASKGATE_BENCH_REDIS_URL names. */
export interface RedisServer {
  readonly url: string;
  readonly pid?: number;
  stop(): Promise<void>;
}

/**
 * A private redis-server on the load core (never the machine's shared one), unless
 * TASKGATE_BENCH_REDIS_URL names one to use; a string says why there is none.
 */
export async function startRedisServer(pinning: Pinning): Promise<RedisServer | string> {
  const given = process.env.TASKGATE_BENCH_REDIS_URL;
  if (given) return { url: given, stop: async () => {} };
  if (!hasCommand('redis-server')) return 'redis-server not found (apt-get install -y redis-server, or set TASKGATE_BENCH_REDIS_URL)';
  const port = await freePort();
  const redis = spawnPinned(pinning, pinning.loadCpu, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], 'ignore');
  await waitForPort(port);
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: redis.pid,
    async stop() {
      if (redis.exitCode !== null) return;
      const exited = new Promise((resolve) => redis.once('exit', resolve));
      redis.kill('SIGTERM');
      await Promise.race([exited, delay(3000)]);
    },
  };
}

/** The store section of a Redis policy; poll snapshots are stored encrypted, with a key made for this run. */
export function redisStore(url: string): Record<string, unknown> {
  return { type: 'redis', url, snapshotKeys: [{ id: 'bench', key: randomBytes(32).toString('base64') }] };
}

/**
 * taskgate on Redis, when the policy accepts a Redis store and the gateway really builds one,
 * on a redis-server of its own (startRedisServer), stopped with it; or on `shared`, which the
 * caller stops (two replicas of one store, bench/push.ts). Every replica of one store must be
 * given the same `store` section (its snapshot key).
 */
export async function startRedisTaskgate(pinning: Pinning, options: Omit<TaskgatePolicyOptions, 'store'>, execArgv: string[] = [], shared?: { redis: RedisServer; store: Record<string, unknown> }): Promise<Target | Skipped> {
  const probe = policyProblem(taskgatePolicy({ ...options, store: redisStore('redis://127.0.0.1:6379') }));
  if (probe) return { name: 'taskgate-redis', reason: `the policy does not accept a Redis store yet (${probe})` };
  const redis = shared?.redis ?? (await startRedisServer(pinning));
  if (typeof redis === 'string') return { name: 'taskgate-redis', reason: redis };
  const stopRedis = shared ? async () => {} : () => redis.stop();
  try {
    const target = await startTaskgate(pinning, 'taskgate-redis', taskgatePolicy({ ...options, store: shared?.store ?? redisStore(redis.url) }), execArgv);
    if (target.child?.details.store !== 'redis') {
      await target.stop();
      await stopRedis();
      const why = target.child?.details.storeProblem;
      return { name: 'taskgate-redis', reason: `the policy names a Redis store but the gateway built a ${String(target.child?.details.store)} store${why ? ` (${String(why)})` : ''}` };
    }
    const redisPid = shared ? undefined : redis.pid;
    return { ...target, pids: () => [...target.pids(), ...(redisPid ? [redisPid] : [])], stop: async () => (await target.stop(), await stopRedis()) };
  } catch (error) {
    await stopRedis();
    return { name: 'taskgate-redis', reason: `taskgate on Redis did not start: ${(error as Error).message.split('\n')[0]}` };
  }
}

export function isSkipped(value: Target | Skipped): value is Skipped {
  return 'reason' in value;
}

/** Used by the report: the exact commit measured, and whether the tree had local changes. */
export function gitRevision(): string {
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src'], { encoding: 'utf8' }).stdout.trim() !== '';
  return head ? `${head}${dirty ? ' (src/ has uncommitted changes)' : ''}` : 'unknown';
}
