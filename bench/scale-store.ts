/**
 * One point of the scale curves: a fresh taskgate holding `size` live tasks on one store, and
 * what a task and a poll cost there (bench/scale.ts runs the points, docs/benchmarks.md "Scale"
 * explains them).
 *
 * How the tasks are put in place, in a fresh gateway each time (and on Redis a fresh private
 * redis-server, so nothing of an earlier point is left):
 *   1. two tasks per principal created through taskgate over HTTP, one whose backend interval
 *      is 0 (its polls are forwarded) and one with an hour (its early polls are cached): the
 *      baseline, and the templates for step 2;
 *   2. all but the last `creations` tasks seeded inside the gateway child (bench/scale-hooks.ts):
 *      copies of those real records with their per-task fields made anew, stored by the store's
 *      own createTask;
 *   3. the last `creations` tasks (10,000 at most) created through taskgate over HTTP at 50
 *      connections, timed: the creation throughput at this size, and the gateway's CPU per
 *      creation.
 * Heap (and on Redis `used_memory`) is read after a full GC before step 2, between 2 and 3, and
 * after 3, so a seeded and a created task are measured apart and the seeding can be checked.
 *
 * Then the polls: up to `pollSample` tasks of each kind drawn uniformly from the whole
 * population (seeded and created alike), in random order, each polled once before the runs (so
 * the runs measure the steady poll of a task, not its first, and the slow ones have a snapshot
 * to be served early), then rounds of load runs as in the main bench (bench/measure.ts: CPU of
 * the gateway process per request, backend counters, foreign load). Successive runs go on
 * through the sample where the last one stopped, so no run polls the same few tasks again.
 */
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import type { MemoryReply } from './child-channel.js';
import { delay, type NodeChild, type Pinning } from './children.js';
import { planLoad, type LoadTool } from './load.js';
import { foreignLoad, round, snapshotBusy } from './machine.js';
import { runRounds, type Cell, type RunLoad } from './measure.js';
import { REDIS_COMMAND_TIMEOUT, waitUntil } from './push.js';
import { summarize, type CellSummary } from './report.js';
import { POLL_KINDS, type PollKind, type ReadTimes, type SampledTask, type SeededSample, type SeedOutcome } from './scale-hooks.js';
import { tasksGet, toolCall, type RequestSpec } from './scenarios.js';
import {
  isSkipped, redisStore, startRedisServer, startRedisTaskgate, startTaskgate, taskgatePolicy, type RedisServer, type Target, type TaskgatePolicyOptions,
} from './targets.js';

export type ScaleStore = 'memory' | 'redis';

export interface ScaleSettings {
  /** Rounds of poll runs per point, each run `seconds` long, at each of `connections`. */
  rounds: number;
  seconds: number;
  connections: number[];
  /** Tasks of each kind polled, drawn from the whole population. */
  pollSample: number;
  /** Tasks created over HTTP (timed) at the end of each point's population. */
  creations: number;
  retryBudgetMs: number;
  foreignThreshold: number;
  /** Heap readings a second apart at most, until two agree (settledHeap). */
  settleReads: number;
}

export interface StorePointOptions {
  pinning: Pinning;
  base: Omit<TaskgatePolicyOptions, 'store' | 'provided'>;
  tokens: string[];
  backend: NodeChild;
  load: LoadTool;
  store: ScaleStore;
  size: number;
  settings: ScaleSettings;
  log: (line: string) => void;
}

export interface CreationRun {
  count: number;
  seconds: number;
  perSecond: number;
  errors: number;
  /** The gateway's CPU over the run ÷ the tasks created. */
  cpuUsPerCreation: number;
  p50Us: number;
  p99Us: number;
  /** Other processes' CPU during the creations, in cores: this machine is shared. */
  foreignCores: number;
}

/** Bytes before seeding, after it and after the HTTP creations, and per task added. */
export interface GrowthFigures {
  before: number;
  seeded: number;
  created: number;
  /** Over every task added after the baseline. */
  perTask: number;
  perSeededTask: number | null;
  perCreatedTask: number | null;
}

export interface StorePoint {
  store: ScaleStore;
  size: number;
  principals: number;
  /** The population: baseline tasks (2 per principal), seeded, created over HTTP. */
  baselineTasks: number;
  seededTasks: number;
  createdTasks: number;
  seeding: { seconds: number; perSecond: number; refused: Record<string, number> };
  creation: CreationRun;
  /** The gateway's heap after GC (both stores; on Redis it should not follow the tasks). */
  heap: GrowthFigures;
  rssPerTask: number;
  /** Redis `used_memory` (INFO memory) of the private redis-server. */
  redisMemory?: GrowthFigures;
  reads: ReadTimes;
  polls: { sample: Record<PollKind, number>; cells: CellSummary[]; kept: number[]; dropped: { round: number; foreignCores: number }[] };
}

/** Creations before the baseline, of tasks that expire after WARM_TTL_MS (the backend's shortest). */
const WARM_CREATIONS = 2000;
const WARM_TTL_MS = 1000;
/** Principals owning the tasks: as many as real traffic would have, ten tasks each at the least. */
const MAX_PRINCIPALS = 1000;
const CREATION_CONNECTIONS = 50;
/** Seeded per IPC call: well inside the harness's 15 s answer limit on a busy machine. */
const SEED_CHUNK = { memory: 50_000, redis: 10_000 } as const;
/** Scenario names whose backend counter (tasks/get) and role the rounds take from bench/scenarios.ts. */
const SCENARIO_OF: Record<PollKind, 'tasks-get-2026' | 'tasks-get-cached'> = { fast: 'tasks-get-2026', slow: 'tasks-get-cached' };

interface StartedPoint {
  target: Target;
  redis?: RedisServer;
  stop(): Promise<void>;
}

async function startPoint(options: StorePointOptions): Promise<StartedPoint> {
  const { pinning, base } = options;
  if (options.store === 'memory') {
    const target = await startTaskgate(pinning, 'taskgate-memory', taskgatePolicy(base), ['--expose-gc']);
    return { target, stop: () => target.stop() };
  }
  const redis = await startRedisServer(pinning);
  if (typeof redis === 'string') throw new Error(redis);
  if (!redis.pid) {
    await redis.stop();
    throw new Error('the scale curves measure a private redis-server (used_memory, restarted per size): TASKGATE_BENCH_REDIS_URL is not used here');
  }
  // commandTimeout as in the status-push measurement: seeding keeps 64 scripts in flight on a
  // shared machine, and a stall past 500 ms would fail a creation rather than measure it.
  const started = await startRedisTaskgate(pinning, base, ['--expose-gc'], { redis, store: { ...redisStore(redis.url), commandTimeout: REDIS_COMMAND_TIMEOUT } });
  if (isSkipped(started)) {
    await redis.stop();
    throw new Error(started.reason);
  }
  const target: Target = { ...started, pids: () => [...started.pids(), redis.pid!] };
  return { target, redis, stop: async () => (await started.stop(), await redis.stop()) };
}

async function callHook<T>(child: NodeChild, hook: string, args?: unknown): Promise<T> {
  const answer = await child.ask<T | { error: string }>('hook', { hook, args });
  if (answer && typeof answer === 'object' && 'error' in answer) throw new Error(`${hook}: ${answer.error}`);
  return answer as T;
}

/**
 * The heap after a full GC once it has settled: for a few seconds after a burst of requests it
 * still sheds a few hundred KB (compiled code, buffers), which at a thousand tasks is as much
 * as the tasks themselves. Read again a second later until two readings agree within 64 KiB.
 */
async function settledHeap(target: Target, reads: number): Promise<MemoryReply> {
  let last = await target.memory!(true);
  for (let i = 0; i < reads; i++) {
    await delay(1000);
    const now = await target.memory!(true);
    const moved = Math.abs(now.heapUsed - last.heapUsed);
    last = now;
    if (moved < 64 * 1024) break;
  }
  return last;
}

async function usedMemory(url: string): Promise<number> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const used = /^used_memory:(\d+)/m.exec(await client.info('memory'))?.[1];
    if (used === undefined) throw new Error('INFO memory has no used_memory');
    return Number(used);
  } finally {
    client.disconnect();
  }
}

interface CreatedTask extends SampledTask {
  kind: PollKind;
}

/** The i-th task of a rotation: kinds alternate, principals take turns (seeding does the same). */
function planned(i: number, principals: number): { kind: PollKind; principal: number } {
  return { kind: i % 2 === 0 ? 'fast' : 'slow', principal: Math.floor(i / 2) % principals };
}

/**
 * Sends each request once through taskgate, `connections` at a time (an undici Pool in the
 * harness, which reads every answer), timed; `read` turns an answer into a result or throws.
 * More than 1 % failed fails the point.
 */
export async function sendEach<T>(url: string, specs: RequestSpec[], connections: number, read: (status: number, text: string, i: number) => T): Promise<{ results: T[]; seconds: number; errors: number; latenciesUs: number[] }> {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const results: T[] = [];
  const latenciesUs: number[] = [];
  let errors = 0;
  let lastError = '';
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < specs.length; i = next++) {
      const t0 = performance.now();
      try {
        const res = await pool.request({ path: target.pathname, method: 'POST', headers: specs[i]!.headers, body: specs[i]!.body });
        results.push(read(res.statusCode, await res.body.text(), i));
        latenciesUs.push((performance.now() - t0) * 1000);
      } catch (error) {
        errors++;
        lastError = (error as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(connections, specs.length) }, worker));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  if (errors > specs.length * 0.01) throw new Error(`${errors} of ${specs.length} requests failed, the last: ${lastError}`);
  return { results, seconds, errors, latenciesUs };
}

/** Creates the planned tasks through taskgate (2026-07-28 tools/call of the backend's create-task), reading each one's handle. */
async function createOverHttp(url: string, tokens: string[], plan: { kind: PollKind; principal: number }[], extra: Record<string, unknown> = {}) {
  const specs = plan.map(({ kind, principal }) => toolCall('2026-07-28', tokens[principal]!, 'create-task', { poll: kind, ...extra }));
  const sent = await sendEach(url, specs, CREATION_CONNECTIONS, (status, text, i): CreatedTask => {
    const handle = (JSON.parse(text) as { result?: { taskId?: unknown } }).result?.taskId;
    if (status !== 200 || typeof handle !== 'string') throw new Error(`creation answered ${status} ${text.slice(0, 200)}`);
    return { ...plan[i]!, handle };
  });
  return { ...sent, tasks: sent.results };
}

/** One poll of each task before the runs: every one is forwarded (a first poll), and leaves its snapshot. */
async function primePolls(url: string, specs: RequestSpec[]): Promise<void> {
  await sendEach(url, specs, CREATION_CONNECTIONS, (status, text) => {
    if (status !== 200 || !text.includes('"result"')) throw new Error(`a priming poll answered ${status} ${text.slice(0, 200)}`);
  });
}

function percentile(values: number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/**
 * Up to `want` tasks of `kind` drawn uniformly from the whole population: the seeded ones
 * through the child's uniform sample of them, the created ones directly, each side in
 * proportion to its share; then shuffled, so the polls come in no order of creation.
 */
function drawSample(kind: PollKind, want: number, seeded: SeededSample, created: CreatedTask[]): SampledTask[] {
  const mine = created.filter((t) => t.kind === kind);
  const population = seeded.seeded[kind] + mine.length;
  const total = Math.min(want, population);
  const fromSeeded = Math.min(seeded.tasks[kind].length, Math.round((total * seeded.seeded[kind]) / Math.max(1, population)));
  const picked = [...shuffle([...seeded.tasks[kind]]).slice(0, fromSeeded), ...shuffle(mine).slice(0, total - fromSeeded)];
  return shuffle(picked.map(({ handle, principal }) => ({ handle, principal })));
}

/** A run that goes on through its requests where the previous run of the same cell stopped. */
function rotating(run: ReturnType<typeof planLoad>): RunLoad {
  let position = 0;
  return async (connections, seconds, pinning) => {
    const result = await run(connections, seconds, pinning, position);
    position += result.requests;
    return result;
  };
}

function growth(before: number, seeded: number, created: number, seededTasks: number, createdTasks: number): GrowthFigures {
  return {
    before,
    seeded,
    created,
    perTask: round((created - before) / Math.max(1, seededTasks + createdTasks), 0),
    perSeededTask: seededTasks > 0 ? round((seeded - before) / seededTasks, 0) : null,
    perCreatedTask: createdTasks > 0 ? round((created - seeded) / createdTasks, 0) : null,
  };
}

export async function measureStorePoint(options: StorePointOptions): Promise<StorePoint> {
  const { pinning, tokens, size, settings, log, store } = options;
  const principals = Math.max(1, Math.min(MAX_PRINCIPALS, tokens.length, Math.floor(size / 10)));
  const baselineTasks = 2 * principals;
  if (size <= baselineTasks) throw new Error(`${size} tasks is too few for ${principals} principals`);
  const createdTasks = Math.min(settings.creations, size - baselineTasks);
  const seededTasks = size - baselineTasks - createdTasks;
  const point = await startPoint(options);
  const { target } = point;
  const child = target.child!;
  const label = `scale ${store} ${size}`;
  try {
    // The creation path warmed up alike at every size (a small point would otherwise time a cold
    // gateway's creations), by tasks that live a second and are swept away before the baseline.
    const warm = Math.min(WARM_CREATIONS, settings.creations);
    log(`${label}: warming up with ${warm} creations of tasks that expire at once`);
    // Completed ones: an expired task still working would be cancelled at its backend, a burst of
    // upstream calls (and sockets) just before the baseline.
    const expired = (await target.counters!()).tasksExpired;
    await createOverHttp(target.url, tokens, Array.from({ length: warm }, (_, i) => planned(i, principals)), { ttlMs: WARM_TTL_MS, completed: true });
    await waitUntil(async () => (await target.counters!()).tasksExpired - expired >= warm, 60_000, `the ${warm} warm-up tasks to expire`);
    log(`${label}: ${baselineTasks} baseline tasks over HTTP (${principals} principals)`);
    const baseline = await createOverHttp(target.url, tokens, Array.from({ length: baselineTasks }, (_, i) => planned(i, principals)));
    if (baseline.errors > 0) throw new Error(`${baseline.errors} baseline creations failed: every principal needs both templates`);
    const templates = { fast: [] as string[], slow: [] as string[] };
    for (const task of baseline.tasks) templates[task.kind][task.principal] = task.handle;
    await callHook(child, 'scale:templates', templates);
    const redisUrl = point.redis?.url;
    const memory = async (): Promise<{ heap: MemoryReply; redis?: number }> => ({ heap: await settledHeap(target, settings.settleReads), ...(redisUrl ? { redis: await usedMemory(redisUrl) } : {}) });
    const before = await memory();

    log(`${label}: seeding ${seededTasks} tasks in the gateway's store`);
    let seeding = { seconds: 0, refused: {} as Record<string, number>, seeded: 0 };
    for (let left = seededTasks; left > 0; ) {
      const count = Math.min(left, SEED_CHUNK[store]);
      const chunk = await callHook<SeedOutcome>(child, 'scale:seed', { count, sample: settings.pollSample });
      for (const [outcome, n] of Object.entries(chunk.refused)) seeding.refused[outcome] = (seeding.refused[outcome] ?? 0) + n;
      seeding = { ...seeding, seconds: seeding.seconds + chunk.seconds, seeded: seeding.seeded + chunk.seeded };
      left -= count;
    }
    if (seeding.seeded !== seededTasks) throw new Error(`the store refused seeded tasks: ${JSON.stringify(seeding.refused)}`);
    const seeded = await memory();

    log(`${label}: ${createdTasks} creations over HTTP, timed`);
    const ours = () => [options.backend.pid, ...target.pids()];
    const cpu0 = await target.cpuUs();
    const busy0 = snapshotBusy(ours());
    const creation = await createOverHttp(target.url, tokens, Array.from({ length: createdTasks }, (_, i) => planned(i, principals)));
    const foreign = foreignLoad(busy0, snapshotBusy(ours()));
    const cpu1 = await target.cpuUs();
    const created = await memory();
    const reads = await callHook<ReadTimes>(child, 'scale:reads');

    const seededSample = await callHook<SeededSample>(child, 'scale:sample');
    const everyCreated = [...baseline.tasks, ...creation.tasks];
    const cells: Cell[] = [];
    const sample = { fast: 0, slow: 0 };
    for (const kind of POLL_KINDS) {
      const tasks = drawSample(kind, settings.pollSample, seededSample, everyCreated);
      sample[kind] = tasks.length;
      const specs: RequestSpec[] = tasks.map((t) => tasksGet('2026-07-28', tokens[t.principal]!, t.handle));
      log(`${label}: priming ${specs.length} ${kind === 'fast' ? 'forwarded' : 'cached'}-poll tasks with one poll each`);
      await primePolls(target.url, specs);
      cells.push({ target, scenario: SCENARIO_OF[kind], run: rotating(planLoad(options.load, target.url, specs)) });
    }

    log(`${label}: ${settings.rounds} rounds of polls`);
    const outcome = await runRounds({
      cells,
      connections: settings.connections,
      seconds: settings.seconds,
      rounds: settings.rounds,
      maxExtraRounds: 0,
      foreignThreshold: settings.foreignThreshold,
      deadline: Date.now(),
      retryBudgetMs: settings.retryBudgetMs,
      pinning,
      backend: options.backend,
      ourPids: ours,
      log: (line) => log(`${label}: ${line}`),
    });
    const added = seededTasks + createdTasks;
    return {
      store,
      size,
      principals,
      baselineTasks,
      seededTasks,
      createdTasks,
      seeding: { seconds: round(seeding.seconds, 2), perSecond: round(seededTasks / Math.max(seeding.seconds, 1e-3), 0), refused: seeding.refused },
      creation: {
        count: creation.tasks.length,
        seconds: round(creation.seconds, 2),
        perSecond: round(creation.tasks.length / creation.seconds, 0),
        errors: creation.errors,
        cpuUsPerCreation: round(((cpu1 ?? 0) - (cpu0 ?? 0)) / Math.max(1, creation.tasks.length), 1),
        p50Us: round(percentile(creation.latenciesUs, 0.5), 0),
        p99Us: round(percentile(creation.latenciesUs, 0.99), 0),
        foreignCores: foreign.foreignCores,
      },
      heap: growth(before.heap.heapUsed, seeded.heap.heapUsed, created.heap.heapUsed, seededTasks, createdTasks),
      rssPerTask: round((created.heap.rss - before.heap.rss) / added, 0),
      ...(before.redis !== undefined ? { redisMemory: growth(before.redis, seeded.redis!, created.redis!, seededTasks, createdTasks) } : {}),
      reads: { scanPageMs: round(reads.scanPageMs, 2), listPageMs: round(reads.listPageMs, 2), listOwnerTasks: reads.listOwnerTasks },
      polls: { sample, cells: summarize(outcome.measurements, outcome.kept), kept: outcome.kept, dropped: outcome.dropped },
    };
  } finally {
    await point.stop();
  }
}
