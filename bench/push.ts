/**
 * Status push (docs/status-push.md) under many listeners: N listeners (bench/push-listener.ts),
 * each a real HTTP client holding one 2026-07-28 `subscriptions/listen` over its principal's
 * own 10 tasks. The tasks are provided tasks (the gateway runs the backend's plain `slow` tool),
 * so the bench decides when each one changes status: every call is held by the backend until
 * the harness releases its group, and the backend stamps the answer with its wall clock.
 *
 * Twice, each on fresh gateways (the proxy core), the backend, Redis and the listeners on the
 * load core:
 *   - memory: one replica on the memory store, calls and listeners on it;
 *   - redis: two replicas on one private redis-server, the calls on A, the listeners on B, so
 *     every notification crosses Redis Pub/Sub (A writes the outcome and announces it, B reads
 *     the task from Redis and writes the notification).
 * Steps: create the tasks (their calls held), each principal polls one task on the listener
 * replica (its token verified, the path warm), heap after GC, open every listener and wait for
 * its acknowledgement and each task's first state, heap after GC again (per subscription: the
 * difference ÷ N), then release the calls in small groups at a steady rate and time each
 * completion at its listener. Listeners spread over the principals one per principal (the
 * default tasks.push.maxSubscriptionsPerPrincipal, 16, is never approached at N ≤ 16 × principals).
 */
import type { NodeChild, Pinning } from './children.js';
import { delay } from './children.js';
import { foreignLoad, round, snapshotBusy } from './machine.js';
import { releaseHeld, ROLE_POLICY } from './provided.js';
import { gatewayLag, pushMemory, scrapeLagBuckets, summarizeLags, type PushCheck, type PushPhase } from './push-figures.js';
import { PushListener } from './push-listener.js';
import { providedCall, send, tasksGet } from './scenarios.js';
import {
  isSkipped, redisStore, startRedisServer, startRedisTaskgate, startTaskgate, taskgatePolicy, type Target, type TaskgatePolicyOptions,
} from './targets.js';

export interface PushSettings {
  listeners: number;
  tasksPerListener: number;
  /** Tasks whose calls one release answers, and releases per second (the completion rate is their product). */
  releaseBatch: number;
  releasesPerSecond: number;
}

export interface PushOptions {
  pinning: Pinning;
  base: Omit<TaskgatePolicyOptions, 'store' | 'provided'>;
  tokens: string[];
  backend: NodeChild;
  settings: PushSettings;
  log: (line: string) => void;
}

/** Tasks per listener: the issue's 1,000 listeners with 10 tasks each. */
export const PUSH_TASKS_PER_LISTENER = 10;
/** A held call lasts at most this long, should the harness never release it. */
const HOLD_MS = 10 * 60_000;
/** Requests in flight at once while creating tasks and opening listeners. */
const CONCURRENCY = 50;
const OPEN_TIMEOUT_MS = 120_000;
export const REDIS_COMMAND_TIMEOUT = '5s';
const COMPLETION_TIMEOUT_MS = 60_000;

interface Replicas {
  label: string;
  calls: Target;
  listeners: Target;
  stop(): Promise<void>;
}

/** Runs `work(i)` for i < count, `CONCURRENCY` at a time. */
export async function inParallel(count: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) await work(i);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, worker));
}

function policyOptions(options: PushOptions): Omit<TaskgatePolicyOptions, 'store'> {
  const tasks = options.settings.listeners * options.settings.tasksPerListener;
  // Every call in flight at the backend (a socket each), and the replica's cap never met.
  return { ...options.base, provided: { ...ROLE_POLICY.provided, connections: tasks + 256, maxRunning: tasks + 256 } };
}

async function memoryReplica(options: PushOptions): Promise<Replicas> {
  const target = await startTaskgate(options.pinning, 'taskgate-memory', taskgatePolicy(policyOptions(options)), ['--expose-gc']);
  return { label: 'one replica (memory store)', calls: target, listeners: target, stop: () => target.stop() };
}

async function redisReplicas(options: PushOptions): Promise<Replicas | string> {
  const redis = await startRedisServer(options.pinning);
  if (typeof redis === 'string') return redis;
  // commandTimeout raised from its 500 ms default: on this shared machine (load averages of 15
  // and more on 2 cores) the gateways' event loops stall past it, and a 503 "task state is
  // unreachable" is then what gets measured rather than the push. Said in docs/benchmarks.md.
  const shared = { redis, store: { ...redisStore(redis.url), commandTimeout: REDIS_COMMAND_TIMEOUT } };
  const started: Target[] = [];
  const stop = async () => {
    for (const t of started.reverse()) await t.stop();
    await redis.stop();
  };
  for (const execArgv of [[], ['--expose-gc']]) {
    const target = await startRedisTaskgate(options.pinning, policyOptions(options), execArgv, shared);
    if (isSkipped(target)) {
      await stop();
      return target.reason;
    }
    started.push(target);
  }
  const [calls, listeners] = started as [Target, Target];
  return { label: `two replicas (Redis, commandTimeout ${REDIS_COMMAND_TIMEOUT}): calls on A, listeners on B`, calls, listeners, stop };
}

export async function heldByBackend(backend: NodeChild): Promise<number> {
  const stats = (await (await fetch(`${backend.url}/stats`)).json()) as Record<string, number>;
  return stats['held:slow'] ?? 0;
}

export async function waitUntil(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await delay(50);
  }
}

async function measurePhase(options: PushOptions, setup: PushPhase['setup'], replicas: Replicas): Promise<PushPhase> {
  const { backend, log } = options;
  const { listeners: n, tasksPerListener: per, releaseBatch, releasesPerSecond } = options.settings;
  const tokenOf = (i: number) => options.tokens[i % options.tokens.length]!;
  const groupOf = (k: number) => `push-${setup}-${Math.floor(k / releaseBatch)}`;
  const groups = Math.ceil((n * per) / releaseBatch);

  // Task k = slot × n + listener: each release answers one slot of `releaseBatch` listeners in a row.
  log(`push (${setup}): creating ${n * per} provided tasks on ${replicas.calls === replicas.listeners ? 'the replica' : 'replica A'}`);
  const handles: string[][] = Array.from({ length: n }, () => []);
  let createdAt = Date.now();
  await inParallel(n * per, async (k) => {
    const [slot, i] = [Math.floor(k / n), k % n];
    const { status, message } = await send(replicas.calls.url, providedCall('2026-07-28', tokenOf(i), { ms: HOLD_MS, group: groupOf(k), stamp: true }));
    const handle = (message?.result as { taskId?: unknown } | undefined)?.taskId;
    if (status !== 200 || typeof handle !== 'string') throw new Error(`provided task creation failed: ${status} ${JSON.stringify(message)?.slice(0, 300)}`);
    handles[i]![slot] = handle;
  });
  const creationSeconds = (Date.now() - createdAt) / 1000;
  await waitUntil(async () => (await heldByBackend(backend)) >= n * per, 30_000, `${n * per} calls held by the backend`);

  // Each principal's token verified on the listener replica, and the read path warm, before the baseline.
  await inParallel(n, async (i) => void (await send(replicas.listeners.url, tasksGet('2026-07-28', tokenOf(i), handles[i]![0]!))));
  const before = await replicas.listeners.memory!(true);

  log(`push (${setup}): opening ${n} listeners`);
  const url = new URL(replicas.listeners.url);
  const listeners = handles.map((taskIds, i) => new PushListener(url, tokenOf(i), taskIds, i + 1));
  try {
    createdAt = Date.now();
    await inParallel(n, (i) => listeners[i]!.open(OPEN_TIMEOUT_MS));
    const openSeconds = (Date.now() - createdAt) / 1000;
    const open = await replicas.listeners.memory!(true);
    const acknowledged = listeners.reduce((sum, l) => sum + l.granted.length, 0);

    log(`push (${setup}): releasing ${n * per} calls, ${releaseBatch} every ${round(1000 / releasesPerSecond, 1)} ms`);
    const adminUrl = String(replicas.listeners.child!.details.adminUrl);
    const bucketsBefore = await scrapeLagBuckets(adminUrl);
    const ours = () => [backend.pid, ...new Set([...replicas.calls.pids(), ...replicas.listeners.pids()])];
    const busyBefore = snapshotBusy(ours());
    const completions = Promise.allSettled(listeners.map((l) => l.completions(COMPLETION_TIMEOUT_MS + groups * (1000 / releasesPerSecond))));
    const releaseSeconds = await releaseOnSchedule(backend, groups, releasesPerSecond, (g) => `push-${setup}-${g}`);
    const settled = await completions;
    const foreign = foreignLoad(busyBefore, snapshotBusy(ours()));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) log(`push (${setup}): ${(failed.reason as Error).message}`);
    // The listen's response follows the last completion on each stream.
    await delay(500);
    const bucketsAfter = await scrapeLagBuckets(adminUrl);
    const delivered = listeners.reduce((sum, l) => sum + l.received, 0);
    const otherEnds: Record<string, number> = {};
    for (const l of listeners) for (const [status, count] of l.otherEnds) otherEnds[status] = (otherEnds[status] ?? 0) + count;
    const otherMessage = listeners.find((l) => l.lastOtherMessage)?.lastOtherMessage;
    // What tasks/get says of ends that never arrived (a few): ended = a notification lost, working = a call not ended.
    const missingByPoll: Record<string, number> = {};
    const pending = listeners.flatMap((l, i) => l.pending().map((handle) => ({ i, handle }))).slice(0, 50);
    for (const { i, handle } of pending) {
      const { message } = await send(replicas.listeners.url, tasksGet('2026-07-28', tokenOf(i), handle));
      const status = String((message?.result as { status?: unknown } | undefined)?.status ?? 'unknown');
      missingByPoll[status] = (missingByPoll[status] ?? 0) + 1;
    }
    const lags = listeners.flatMap((l) => l.lagsMs);
    return {
      setup,
      label: replicas.label,
      listeners: n,
      tasksPerListener: per,
      principals: Math.min(n, options.tokens.length),
      acknowledged,
      creationSeconds: round(creationSeconds, 2),
      openSeconds: round(openSeconds, 2),
      releaseBatch,
      releaseSeconds: round(releaseSeconds, 2),
      completionsPerSecond: round((n * per) / releaseSeconds, 0),
      offeredPerSecond: releaseBatch * releasesPerSecond,
      foreign,
      delivered,
      otherEnds,
      missingByPoll,
      listenRetries: listeners.reduce((sum, l) => sum + l.retries, 0),
      ...(otherMessage ? { otherMessage } : {}),
      missing: acknowledged - delivered - Object.values(otherEnds).reduce((a, b) => a + b, 0),
      unstamped: listeners.reduce((sum, l) => sum + l.unstamped, 0),
      cleanEnds: listeners.filter((l) => l.endedCleanly).length,
      lag: summarizeLags(lags) ?? null,
      gatewayLag: gatewayLag(bucketsBefore, bucketsAfter) ?? null,
      memory: pushMemory(before, open, n, acknowledged),
    };
  } finally {
    await Promise.all(listeners.map((l) => l.close()));
    await releaseHeld(backend).catch(() => 0);
  }
}

/** Releases the held calls of `groups` groups, `perSecond` groups a second; returns the seconds it took. */
export async function releaseOnSchedule(backend: NodeChild, groups: number, perSecond: number, groupName: (g: number) => string): Promise<number> {
  const started = performance.now();
  for (let g = 0; g < groups; g++) {
    // A steady schedule: a late release is not followed by a catch-up burst beyond the next slot.
    const wait = started + (g * 1000) / perSecond - performance.now();
    if (wait > 0) await delay(wait);
    await releaseHeld(backend, groupName(g));
  }
  return (performance.now() - started) / 1000;
}

/** Both setups, each on gateways of its own, stopped before the next starts. */
export async function checkPush(options: PushOptions): Promise<PushCheck> {
  const check: PushCheck = { phases: [], skipped: [] };
  for (const setup of ['memory', 'redis'] as const) {
    const replicas = setup === 'memory' ? await memoryReplica(options) : await redisReplicas(options);
    if (typeof replicas === 'string') {
      options.log(`push (${setup}) skipped: ${replicas}`);
      check.skipped.push({ setup, reason: replicas });
      continue;
    }
    try {
      check.phases.push(await measurePhase(options, setup, replicas));
    } catch (error) {
      // One setup failing (a shared machine's stalls) leaves the other's figures standing.
      const cause = (error as { cause?: unknown }).cause;
      options.log(`push (${setup}) failed: ${(error as Error).message}${cause ? ` (${String(cause)})` : ''}`);
      for (const t of new Set([replicas.calls, replicas.listeners])) {
        const tail = t.child?.stderrTail().trim();
        if (tail) options.log(`push (${setup}): ${t.name} (pid ${t.child!.pid}) stderr:\n${tail}`);
      }
      check.skipped.push({ setup, reason: `failed: ${(error as Error).message.split('\n')[0]}` });
    } finally {
      await replicas.stop();
    }
  }
  return check;
}
