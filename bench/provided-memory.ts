/**
 * Memory per running provided task: a fresh taskgate (memory store, --expose-gc, the
 * provided-task policy) is made to hold `count` tasks at once, created by 2025 clients
 * (`tools/call` with `params.task`, answered at once) of many principals, each running a call
 * of the backend's `slow` tool that the backend holds until the harness releases it. Heap, RSS
 * and external memory are read after a full GC before, while they run, and after they ended.
 *
 * What "running" means depends on the upstream's sockets per instance (undici `connections`):
 *   - sockets ≥ count: every call is an HTTP request in flight at the backend (its socket, its
 *     undici request, the task's driver, call, lease and timers, the record and state);
 *   - the default 128: 128 calls reach the backend, the others are held by taskgate as tasks
 *     whose request waits in undici's queue (no socket of its own).
 * Both are measured, in that order, each in a gateway of its own. After they end, what is left
 * is the finished tasks (record, state and result, kept until their TTL) and no call.
 */
import type { MemoryReply } from './child-channel.js';
import { delay, type NodeChild, type Pinning } from './children.js';
import { runNodeLoad } from './load.js';
import { openSockets, round } from './machine.js';
import { releaseHeld, ROLE_POLICY } from './provided.js';
import { providedCall } from './scenarios.js';
import { startTaskgate, taskgatePolicy, type TaskgatePolicyOptions } from './targets.js';

/** The backend answers a held call after this at the latest, should the harness never release it. */
const HOLD_LIMIT_MS = 120_000;
/** Default undici connections per instance (upstreams.*.connections). */
export const DEFAULT_CONNECTIONS = 128;

export interface ProvidedMemoryRun {
  /** Upstream sockets per instance in this gateway's policy. */
  connections: number;
  tasks: number;
  principals: number;
  creationSeconds: number;
  creationsPerSecond: number;
  errors: number;
  /** When measured: calls the backend held open (in-flight HTTP requests) and calls taskgate held (tasks running). */
  heldByBackend: number;
  runningInGateway: number;
  before: MemoryReply;
  running: MemoryReply;
  ended: MemoryReply;
  heapBytesPerRunningTask: number;
  rssBytesPerRunningTask: number;
  /** external + arrayBuffers (undici's parsers, socket buffers held by Node). */
  externalBytesPerRunningTask: number;
  /** After every call ended: per finished task still kept (until its TTL). */
  heapBytesPerEndedTask: number;
  rssBytesPerEndedTask: number;
  /** Sockets the gateway process held open (/proc/<pid>/fd) before and while the calls ran, and the difference per running task. */
  socketsBefore: number;
  socketsRunning: number;
  socketsPerRunningTask: number;
  /** From the release until taskgate held no call. */
  endSeconds: number;
  runningAfterEnd: number;
}

export interface ProvidedMemoryCheck {
  runs: ProvidedMemoryRun[];
}

async function backendHeld(backend: NodeChild): Promise<number> {
  const stats = (await (await fetch(`${backend.url}/stats`)).json()) as Record<string, number>;
  return stats['held:slow'] ?? 0;
}

/** Polls `read` until `done` says so or `ms` passed; returns the last value. */
async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await delay(50);
  }
}

export interface ProvidedMemoryOptions {
  pinning: Pinning;
  base: Omit<TaskgatePolicyOptions, 'store' | 'provided'>;
  tokens: string[];
  backend: NodeChild;
  count: number;
  connections: number;
}

/** One gateway of its own holding `count` provided tasks with `connections` sockets per instance (also the scale curves' held calls, bench/scale-held.ts). */
export async function measureRun(options: ProvidedMemoryOptions): Promise<ProvidedMemoryRun> {
  const { pinning, backend, count, connections } = options;
  // As many principals as tasks at most: a small run has no owners without a task.
  const tokens = options.tokens.slice(0, Math.min(options.tokens.length, count));
  const policy = taskgatePolicy({ ...options.base, provided: { ...ROLE_POLICY.provided, connections, maxRunning: count + tokens.length } });
  const target = await startTaskgate(pinning, 'taskgate-memory', policy, ['--expose-gc']);
  const running = async () => (await target.counters!()).providedRunning;
  const group = `memory-${connections}`;
  try {
    // One finished task per principal first: verified tokens, per-owner indexes and the JIT
    // are then part of the baseline, not of the per-task cost.
    const warm = tokens.map((t) => providedCall('2025-11-25', t, { ms: 0, close: true }));
    await runNodeLoad({ url: target.url, specs: warm, connections: 10, seconds: 0, count: tokens.length }, pinning);
    await waitFor(running, (n) => n === 0, 10_000);
    const before = await target.memory!(true);
    const pid = target.pids()[0]!;
    const socketsBefore = openSockets(pid);

    // Connection: close on every reply: sockets end with their call instead of idling in the pool.
    const specs = tokens.map((t) => providedCall('2025-11-25', t, { ms: HOLD_LIMIT_MS, group, close: true }));
    const load = await runNodeLoad({ url: target.url, specs, connections: 50, seconds: 0, count }, pinning);
    const created = count - load.errors;
    const heldByBackend = await waitFor(() => backendHeld(backend), (n) => n >= Math.min(created, connections), 30_000);
    const runningInGateway = await running();
    const during = await target.memory!(true);
    const socketsRunning = openSockets(pid);

    const released = Date.now();
    await releaseHeld(backend, group);
    const runningAfterEnd = await waitFor(running, (n) => n === 0, 60_000);
    const endSeconds = (Date.now() - released) / 1000;
    const ended = await target.memory!(true);
    const per = (a: number, b: number) => round((a - b) / Math.max(1, created), 0);
    return {
      connections,
      tasks: created,
      principals: tokens.length,
      creationSeconds: round(load.seconds, 2),
      creationsPerSecond: round(load.rps, 0),
      errors: load.errors,
      heldByBackend,
      runningInGateway,
      before,
      running: during,
      ended,
      heapBytesPerRunningTask: per(during.heapUsed, before.heapUsed),
      rssBytesPerRunningTask: per(during.rss, before.rss),
      externalBytesPerRunningTask: per(during.external + during.arrayBuffers, before.external + before.arrayBuffers),
      heapBytesPerEndedTask: per(ended.heapUsed, before.heapUsed),
      rssBytesPerEndedTask: per(ended.rss, before.rss),
      socketsBefore,
      socketsRunning,
      socketsPerRunningTask: round((socketsRunning - socketsBefore) / Math.max(1, created), 3),
      endSeconds: round(endSeconds, 2),
      runningAfterEnd,
    };
  } finally {
    await releaseHeld(backend, group).catch(() => 0);
    await target.stop();
  }
}

/** Every call on the wire first, then the default sockets per instance (`queued` false leaves that out). */
export async function checkProvidedMemory(options: Omit<ProvidedMemoryOptions, 'connections'> & { queued: boolean }): Promise<ProvidedMemoryCheck> {
  const runs = [await measureRun({ ...options, connections: options.count + 256 })];
  if (options.queued) runs.push(await measureRun({ ...options, connections: DEFAULT_CONNECTIONS }));
  return { runs };
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

export function providedMemoryText(check: ProvidedMemoryCheck | { skipped: string }): string {
  if ('skipped' in check) return `- skipped: ${check.skipped}`;
  return check.runs
    .map((r) => {
      const how = r.connections >= r.tasks ? `${r.connections} sockets per instance: every call in flight at the backend` : `${r.connections} sockets per instance (the default): ${r.heldByBackend} calls at the backend, the rest queued in undici`;
      return [
        `- ${r.tasks} running provided tasks from ${r.principals} principals (${how}), created through taskgate in ${r.creationSeconds} s (${r.creationsPerSecond}/s, ${r.errors} errors); measured with ${r.heldByBackend} calls held by the backend and ${r.runningInGateway} by taskgate`,
        `  - heap after GC: ${mib(r.before.heapUsed)} → ${mib(r.running.heapUsed)} while running: **${r.heapBytesPerRunningTask} B per running task**; RSS ${r.rssBytesPerRunningTask} B, external + array buffers ${r.externalBytesPerRunningTask} B per task; ${r.socketsBefore} → ${r.socketsRunning} sockets open (${r.socketsPerRunningTask} per running task)`,
        `  - after every call ended (${r.endSeconds} s after the release; ${r.runningAfterEnd} still held): heap ${mib(r.ended.heapUsed)}, **${r.heapBytesPerEndedTask} B per finished task** (record, state and result, kept until the TTL); RSS ${r.rssBytesPerEndedTask} B per task`,
      ].join('\n');
    })
    .join('\n');
}
