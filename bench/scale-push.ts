/**
 * The status push's scale curve: one replica (memory store) with L open `subscriptions/listen`
 * listeners, L = 1,000 and 10,000 in the full run, and what each costs: heap and sockets per
 * open listener, and the delivery lag of task completions at a fixed rate (bench/push.ts
 * measures the push itself at 1,000 listeners × 10 tasks, on one replica and across two).
 *
 * Each listener names one provided task of its principal (the backend holds every call until
 * the harness releases it, and stamps its answer), and two listeners share each task: L/2
 * tasks, so the gateway holds L client sockets and L/2 backend sockets. With one task per
 * listener, 10,000 listeners would need 20,000 sockets in one process, the machine's limit
 * (`ulimit -n`). Principals: one per task up to 1,000; at 10,000 listeners each principal
 * holds 5 tasks and 10 listens (tasks.push.maxSubscriptionsPerPrincipal is 16).
 * Completions come at 200 a second (20 releases of 10 tasks), each to its two listeners.
 */
import type { NodeChild, Pinning } from './children.js';
import { delay } from './children.js';
import { foreignLoad, openSockets, round, snapshotBusy, type ForeignLoad } from './machine.js';
import { releaseHeld, ROLE_POLICY } from './provided.js';
import { heldByBackend, inParallel, releaseOnSchedule, waitUntil } from './push.js';
import { gatewayLag, pushMemory, scrapeLagBuckets, summarizeLags, type GatewayLag, type LagSummary, type PushMemory } from './push-figures.js';
import { PushListener } from './push-listener.js';
import { sendEach } from './scale-store.js';
import { providedCall, tasksGet } from './scenarios.js';
import { startTaskgate, taskgatePolicy, type TaskgatePolicyOptions } from './targets.js';

export const LISTENERS_PER_TASK = 2;
const RELEASE_BATCH = 10;
const RELEASES_PER_SECOND = 20;
const HOLD_MS = 10 * 60_000;
const OPEN_TIMEOUT_MS = 180_000;
const COMPLETION_TIMEOUT_MS = 60_000;
/** Requests in flight while the tasks are created and the listeners open. */
const CONCURRENCY = 50;

export interface PushPoint {
  listeners: number;
  tasks: number;
  principals: number;
  openSeconds: number;
  acknowledged: number;
  /** Completions received over every listener (LISTENERS_PER_TASK per task), other ends, and ends that never came. */
  delivered: number;
  otherEnds: number;
  missing: number;
  cleanEnds: number;
  completionsPerSecond: number;
  foreign: ForeignLoad;
  lag: LagSummary | null;
  gatewayLag: GatewayLag | null;
  memory: PushMemory;
  socketsBefore: number;
  socketsOpen: number;
  socketsPerListener: number;
}

export interface PushPointOptions {
  pinning: Pinning;
  base: Omit<TaskgatePolicyOptions, 'store' | 'provided'>;
  tokens: string[];
  backend: NodeChild;
  listeners: number;
  log: (line: string) => void;
}

export async function measurePushPoint(options: PushPointOptions): Promise<PushPoint> {
  const { backend, listeners: n, log } = options;
  const tasks = Math.ceil(n / LISTENERS_PER_TASK);
  const principals = Math.min(options.tokens.length, tasks);
  const tokenOfTask = (t: number) => options.tokens[t % principals]!;
  const group = (t: number) => `scale-push-${n}-${Math.floor(t / RELEASE_BATCH)}`;
  const policy = JSON.parse(taskgatePolicy({ ...options.base, provided: { ...ROLE_POLICY.provided, connections: tasks + 256, maxRunning: tasks + 256 } })) as Record<string, unknown>;
  // A listener is a client connection: past limits.maxConnections (4,096 by default) the gateway
  // closes new ones at once, so a replica meant for 10,000 listeners must raise it (docs/benchmarks.md "Scale").
  policy.limits = { ...(policy.limits as object | undefined), maxConnections: n + 1024 };
  const target = await startTaskgate(options.pinning, 'taskgate-memory', JSON.stringify(policy), ['--expose-gc']);
  const pid = target.pids()[0]!;
  const label = `scale push ${n}`;
  let open: PushListener[] = [];
  try {
    log(`${label}: ${tasks} provided tasks (calls held)`);
    // Through a pool of its own, closed before the baseline: its sockets are not counted as listeners'.
    const handles: string[] = [];
    const creations = Array.from({ length: tasks }, (_, t) => providedCall('2026-07-28', tokenOfTask(t), { ms: HOLD_MS, group: group(t), stamp: true }));
    await sendEach(target.url, creations, CONCURRENCY, (status, text, t) => {
      const handle = (JSON.parse(text) as { result?: { taskId?: unknown } }).result?.taskId;
      if (status !== 200 || typeof handle !== 'string') throw new Error(`provided task creation answered ${status} ${text.slice(0, 300)}`);
      handles[t] = handle;
    });
    if (handles.filter(Boolean).length < tasks) throw new Error(`${tasks - handles.filter(Boolean).length} provided task creations failed`);
    await waitUntil(async () => (await heldByBackend(backend)) >= tasks, 60_000, `${tasks} calls held by the backend`);
    // Each principal's token verified and the read path warm before the baseline.
    await sendEach(target.url, Array.from({ length: principals }, (_, p) => tasksGet('2026-07-28', tokenOfTask(p), handles[p]!)), CONCURRENCY, () => undefined);
    const before = await target.memory!(true);
    const socketsBefore = openSockets(pid);

    log(`${label}: opening ${n} listeners`);
    const url = new URL(target.url);
    open = Array.from({ length: n }, (_, i) => new PushListener(url, tokenOfTask(i % tasks), [handles[i % tasks]!], i + 1));
    const opened = performance.now();
    await inParallel(n, (i) => open[i]!.open(OPEN_TIMEOUT_MS));
    const openSeconds = (performance.now() - opened) / 1000;
    const withListeners = await target.memory!(true);
    const socketsOpen = openSockets(pid);
    const acknowledged = open.reduce((sum, l) => sum + l.granted.length, 0);

    log(`${label}: releasing ${tasks} calls, ${RELEASE_BATCH} every ${1000 / RELEASES_PER_SECOND} ms`);
    const adminUrl = String(target.child!.details.adminUrl);
    const bucketsBefore = await scrapeLagBuckets(adminUrl);
    const ours = () => [backend.pid, pid];
    const busyBefore = snapshotBusy(ours());
    const groups = Math.ceil(tasks / RELEASE_BATCH);
    const completions = Promise.allSettled(open.map((l) => l.completions(COMPLETION_TIMEOUT_MS + (groups * 1000) / RELEASES_PER_SECOND)));
    const releaseSeconds = await releaseOnSchedule(backend, groups, RELEASES_PER_SECOND, (g) => `scale-push-${n}-${g}`);
    const settled = await completions;
    const foreign = foreignLoad(busyBefore, snapshotBusy(ours()));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) log(`${label}: ${(failed.reason as Error).message}`);
    // The listen's response follows the last completion on each stream.
    await delay(500);
    const bucketsAfter = await scrapeLagBuckets(adminUrl);
    const delivered = open.reduce((sum, l) => sum + l.received, 0);
    const otherEnds = open.reduce((sum, l) => sum + [...l.otherEnds.values()].reduce((a, b) => a + b, 0), 0);
    return {
      listeners: n,
      tasks,
      principals,
      openSeconds: round(openSeconds, 2),
      acknowledged,
      delivered,
      otherEnds,
      missing: acknowledged - delivered - otherEnds,
      cleanEnds: open.filter((l) => l.endedCleanly).length,
      completionsPerSecond: round(tasks / releaseSeconds, 0),
      foreign,
      lag: summarizeLags(open.flatMap((l) => l.lagsMs)) ?? null,
      gatewayLag: gatewayLag(bucketsBefore, bucketsAfter) ?? null,
      memory: pushMemory(before, withListeners, n, acknowledged),
      socketsBefore,
      socketsOpen,
      socketsPerListener: round((socketsOpen - socketsBefore) / n, 3),
    };
  } finally {
    await Promise.all(open.map((l) => l.close()));
    await releaseHeld(backend).catch(() => 0);
    await target.stop();
  }
}
