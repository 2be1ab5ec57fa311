/**
 * The scale curves (issue #29): how taskgate's costs grow with the work it holds. `npm run bench
 * -- --scale` runs them alone (`--scale-sizes a,b,…` for other sizes); the full run has them too.
 * One list of sizes drives every curve:
 *   - live tasks on the memory store at every size, on Redis at sizes up to 100,000
 *     (bench/scale-store.ts): CPU per forwarded and per cached poll, p50/p99, heap or Redis
 *     used_memory per task, creation throughput;
 *   - open status-push listeners at sizes up to 10,000 (bench/scale-push.ts);
 *   - gateway-run tasks with their backend call held, at sizes up to 10,000: heap and sockets
 *     per held call (bench/provided-memory.ts's measurement, every call on its own socket).
 * Each point runs on fresh processes; a point that fails is reported as skipped with its reason
 * and the others still run.
 */
import type { NodeChild, Pinning } from './children.js';
import type { LoadTool } from './load.js';
import { round } from './machine.js';
import { measureRun } from './provided-memory.js';
import { measurePushPoint, type PushPoint } from './scale-push.js';
import { measureStorePoint, type ScaleSettings, type StorePoint } from './scale-store.js';
import type { TaskgatePolicyOptions } from './targets.js';

export const SCALE_SIZES = [1_000, 10_000, 100_000, 1_000_000] as const;
/** The largest size each curve goes to: Redis holds its tasks in one redis-server, listeners and held calls a socket each. */
export const SCALE_LIMITS = { redis: 100_000, push: 10_000, held: 10_000 } as const;

/** The curves one run may be limited to (`--scale-curves`): the two stores, held calls, push listeners. */
export const SCALE_CURVES = ['memory', 'redis', 'held', 'push'] as const;
export type ScaleCurve = (typeof SCALE_CURVES)[number];

export interface HeldPoint {
  calls: number;
  principals: number;
  creationsPerSecond: number;
  heapBytesPerCall: number;
  rssBytesPerCall: number;
  externalBytesPerCall: number;
  socketsPerCall: number;
  socketsRunning: number;
  /** Heap per task once every call ended (the finished tasks kept until their TTL). */
  heapBytesPerEndedTask: number;
}

export interface ScaleCheck {
  sizes: number[];
  settings: ScaleSettings;
  stores: StorePoint[];
  push: PushPoint[];
  held: HeldPoint[];
  skipped: { what: string; reason: string }[];
}

export interface ScaleOptions {
  pinning: Pinning;
  base: Omit<TaskgatePolicyOptions, 'store' | 'provided'>;
  tokens: string[];
  backend: NodeChild;
  load: LoadTool;
  sizes: readonly number[];
  /** Which curves to measure (all by default). */
  curves?: readonly ScaleCurve[];
  settings: ScaleSettings;
  log: (line: string) => void;
}

/** Runs `measure`, or notes why it could not, so one failed point leaves the others standing. */
async function attempt<T>(check: ScaleCheck, what: string, log: (line: string) => void, measure: () => Promise<T>, into: T[]): Promise<void> {
  try {
    into.push(await measure());
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0] ?? String(error);
    log(`${what} failed: ${(error as Error).stack ?? reason}`);
    check.skipped.push({ what, reason: `failed: ${reason}` });
  }
}

export async function checkScale(options: ScaleOptions): Promise<ScaleCheck> {
  const { sizes, log } = options;
  const curves = new Set(options.curves ?? SCALE_CURVES);
  const check: ScaleCheck = { sizes: [...sizes], settings: options.settings, stores: [], push: [], held: [], skipped: [] };
  const upTo = (curve: ScaleCurve, limit: number) => (curves.has(curve) ? sizes.filter((size) => size <= limit) : []);
  for (const store of ['memory', 'redis'] as const) {
    for (const size of upTo(store, store === 'redis' ? SCALE_LIMITS.redis : Infinity)) {
      await attempt(check, `${store} store, ${size} tasks`, log, () => measureStorePoint({ ...options, store, size }), check.stores);
    }
  }
  for (const calls of upTo('held', SCALE_LIMITS.held)) {
    log(`scale held calls ${calls}: gateway-run tasks, every call held by the backend on its own socket`);
    await attempt(check, `${calls} held calls`, log, () => measureHeld(options, calls), check.held);
  }
  for (const listeners of upTo('push', SCALE_LIMITS.push)) {
    await attempt(check, `${listeners} push listeners`, log, () => measurePushPoint({ ...options, listeners }), check.push);
  }
  return check;
}

async function measureHeld(options: ScaleOptions, calls: number): Promise<HeldPoint> {
  // Every call in flight at the backend: a socket each (sockets per instance past the calls).
  const run = await measureRun({ pinning: options.pinning, base: options.base, tokens: options.tokens, backend: options.backend, count: calls, connections: calls + 256 });
  if (run.heldByBackend < run.tasks) throw new Error(`only ${run.heldByBackend} of ${run.tasks} calls reached the backend`);
  return {
    calls: run.tasks,
    principals: run.principals,
    creationsPerSecond: run.creationsPerSecond,
    heapBytesPerCall: run.heapBytesPerRunningTask,
    rssBytesPerCall: run.rssBytesPerRunningTask,
    externalBytesPerCall: run.externalBytesPerRunningTask,
    socketsPerCall: round(run.socketsPerRunningTask, 2),
    socketsRunning: run.socketsRunning,
    heapBytesPerEndedTask: run.heapBytesPerEndedTask,
  };
}

export type ScaleMode = 'full' | 'quick' | 'smoke';

/**
 * Per harness mode: the sizes, how the polls are run, and the time the curves may take (a
 * bound, well above what they took: docs/benchmarks.md "Scale"). The full run (and `--scale` alone)
 * measures every size of the issue; `--scale --quick` stops at 100,000 with shorter rounds;
 * `--scale --smoke` (test/bench/bench-scale-smoke.test.ts) checks that every curve is measured,
 * at sizes a test can afford.
 */
export const SCALE_MODES: Record<ScaleMode, { sizes: readonly number[]; settings: ScaleSettings; limitMs: number }> = {
  full: { sizes: SCALE_SIZES, limitMs: 25 * 60_000, settings: { rounds: 3, seconds: 2, connections: [1, 50], pollSample: 15_000, creations: 10_000, retryBudgetMs: 20_000, foreignThreshold: 0.25, settleReads: 8 } },
  quick: { sizes: [1_000, 10_000, 100_000], limitMs: 12 * 60_000, settings: { rounds: 2, seconds: 1, connections: [1, 50], pollSample: 10_000, creations: 5_000, retryBudgetMs: 0, foreignThreshold: 0.25, settleReads: 4 } },
  smoke: { sizes: [200, 400], limitMs: 100_000, settings: { rounds: 1, seconds: 1, connections: [10], pollSample: 200, creations: 200, retryBudgetMs: 0, foreignThreshold: 0.25, settleReads: 1 } },
};

/** `--scale-curves memory,push`: the curves asked for, checked. */
export function parseScaleCurves(text: string): ScaleCurve[] {
  const curves = text.split(',').map((s) => s.trim());
  const unknown = curves.filter((c) => !(SCALE_CURVES as readonly string[]).includes(c));
  if (unknown.length > 0) throw new Error(`--scale-curves takes ${SCALE_CURVES.join(', ')}, not ${unknown.join(', ')}`);
  return curves as ScaleCurve[];
}

/** `--scale-sizes 1000,10000`: the sizes asked for, checked. */
export function parseScaleSizes(text: string): number[] {
  const sizes = text.split(',').map((s) => Number(s.trim()));
  if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 100)) throw new Error(`--scale-sizes takes whole numbers of at least 100, comma separated, not ${text}`);
  return [...new Set(sizes)].sort((a, b) => a - b);
}
