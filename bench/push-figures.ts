/**
 * The figures of the status-push measurement (bench/push.ts): percentiles of the lags the
 * listeners timed, the gateway's own delivery-lag histogram (taskgate_push_delivery_lag_seconds,
 * scraped from the admin /metrics before and after the releases), and the text for the report.
 */
import type { MemoryReply } from './child-channel.js';
import { round, type ForeignLoad, type MachineInfo } from './machine.js';

const LAG_METRIC = 'taskgate_push_delivery_lag_seconds';

export interface LagSummary {
  samples: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

/** Nearest-rank percentiles of `values` (ms); undefined when there is none. */
export function summarizeLags(values: number[]): LagSummary | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!, 2);
  return {
    samples: sorted.length,
    p50Ms: at(0.5),
    p90Ms: at(0.9),
    p99Ms: at(0.99),
    maxMs: round(sorted[sorted.length - 1]!, 2),
    meanMs: round(sorted.reduce((a, b) => a + b, 0) / sorted.length, 2),
  };
}

/** Cumulative bucket counts of the delivery-lag histogram, by upper bound in seconds (+Inf as Infinity). */
export type Buckets = Map<number, number>;

/** Reads the delivery-lag buckets from a Prometheus text exposition. */
export function parseLagBuckets(text: string): Buckets {
  const buckets: Buckets = new Map();
  const line = new RegExp(`^${LAG_METRIC}_bucket\\{[^}]*le="([^"]+)"[^}]*\\} (\\S+)$`);
  for (const row of text.split('\n')) {
    const match = line.exec(row);
    if (!match) continue;
    const le = match[1] === '+Inf' ? Infinity : Number(match[1]);
    buckets.set(le, (buckets.get(le) ?? 0) + Number(match[2]));
  }
  return buckets;
}

export async function scrapeLagBuckets(adminUrl: string): Promise<Buckets> {
  const res = await fetch(`${adminUrl}/metrics`);
  return parseLagBuckets(await res.text());
}

export interface GatewayLag {
  /** Notifications observed between the two scrapes. */
  count: number;
  /** Interpolated within the bucket, as Prometheus' histogram_quantile does; "> 30 s" is reported as 30 s. */
  p50Ms: number;
  p99Ms: number;
  /** The bucket bounds, so a reader knows the resolution. */
  buckets: string;
}

/** Quantiles of what was observed between `before` and `after`; undefined when nothing was. */
export function gatewayLag(before: Buckets, after: Buckets): GatewayLag | undefined {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((le) => (after.get(le) ?? 0) - (before.get(le) ?? 0));
  const total = counts[counts.length - 1] ?? 0;
  if (total <= 0) return undefined;
  const quantile = (q: number): number => {
    const rank = q * total;
    const i = counts.findIndex((c) => c >= rank);
    const upper = bounds[i]!;
    const lower = i === 0 ? 0 : bounds[i - 1]!;
    if (!Number.isFinite(upper)) return lower * 1000;
    const below = i === 0 ? 0 : counts[i - 1]!;
    const inBucket = counts[i]! - below;
    return (lower + (upper - lower) * (inBucket > 0 ? (rank - below) / inBucket : 1)) * 1000;
  };
  return { count: total, p50Ms: round(quantile(0.5), 1), p99Ms: round(quantile(0.99), 1), buckets: bounds.filter(Number.isFinite).map((b) => `${b * 1000}`).join(', ') + ' ms' };
}

export interface PushMemory {
  before: MemoryReply;
  open: MemoryReply;
  heapBytesPerSubscription: number;
  heapBytesPerTaskId: number;
  rssBytesPerSubscription: number;
  externalBytesPerSubscription: number;
}

export function pushMemory(before: MemoryReply, open: MemoryReply, subscriptions: number, taskIds: number): PushMemory {
  const per = (a: number, b: number, n: number) => round((a - b) / Math.max(1, n), 0);
  return {
    before,
    open,
    heapBytesPerSubscription: per(open.heapUsed, before.heapUsed, subscriptions),
    heapBytesPerTaskId: per(open.heapUsed, before.heapUsed, taskIds),
    rssBytesPerSubscription: per(open.rss, before.rss, subscriptions),
    externalBytesPerSubscription: per(open.external + open.arrayBuffers, before.external + before.arrayBuffers, subscriptions),
  };
}

export interface PushPhase {
  setup: 'memory' | 'redis';
  /** Where the calls ran and where the listeners were connected. */
  label: string;
  listeners: number;
  tasksPerListener: number;
  principals: number;
  /** Handles acknowledged over every listener (listeners × tasks when all went well). */
  acknowledged: number;
  creationSeconds: number;
  /** Listens answered 503 (the store too slow) and sent again. */
  listenRetries: number;
  /** From the first listen sent to every listener having its acknowledgement and each task's first state. */
  openSeconds: number;
  /** The releases: tasks per release, achieved completions per second. */
  releaseBatch: number;
  releaseSeconds: number;
  completionsPerSecond: number;
  /** Completions per second asked for (the schedule); completionsPerSecond is what the releases achieved. */
  offeredPerSecond: number;
  /** Other processes' CPU from the first release to the last completion: this machine is shared. */
  foreign: ForeignLoad;
  /** Completions the listeners received, tasks that ended otherwise (failed: a lease lost under load), and ends that never came within the wait. */
  delivered: number;
  otherEnds: Record<string, number>;
  otherMessage?: string;
  /** Of the missing ends (50 at most), what tasks/get on the listener replica answered, by status. */
  missingByPoll: Record<string, number>;
  missing: number;
  unstamped: number;
  /** Streams that ended with the listen's response after their last task ended. */
  cleanEnds: number;
  /** Client-side: backend answer → chunk at the listener. */
  lag: LagSummary | null;
  /** The listener replica's own histogram: the task's lastUpdatedAt → the write on the stream. */
  gatewayLag: GatewayLag | null;
  /** Heap of the listener replica after GC, before and with every listener open. */
  memory: PushMemory;
}

export interface PushCheck {
  phases: PushPhase[];
  skipped: { setup: string; reason: string }[];
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

function otherEndsText(p: PushPhase): string {
  const ends = Object.entries(p.otherEnds).map(([status, n]) => `${n} ${status}`);
  return ends.length ? `${ends.join(', ')} delivered as such${p.otherMessage ? ` ("${p.otherMessage}")` : ''}, ` : '';
}

function phaseText(p: PushPhase): string {
  const lag = p.lag ? `**p50 ${p.lag.p50Ms} ms, p99 ${p.lag.p99Ms} ms** (p90 ${p.lag.p90Ms}, max ${p.lag.maxMs}, mean ${p.lag.meanMs}; ${p.lag.samples} completions)` : 'no completion timed';
  const gateway = p.gatewayLag ? `p50 ${p.gatewayLag.p50Ms} ms, p99 ${p.gatewayLag.p99Ms} ms over ${p.gatewayLag.count} notifications (buckets ${p.gatewayLag.buckets})` : 'nothing observed';
  const m = p.memory;
  return [
    `- ${p.label}: ${p.listeners} listeners × ${p.tasksPerListener} provided tasks from ${p.principals} principals (${p.acknowledged} handles acknowledged); tasks created in ${p.creationSeconds} s, listeners open (acknowledged, every first state read) in ${p.openSeconds} s${p.listenRetries ? ` (${p.listenRetries} listens answered 503 and sent again)` : ''}`,
    `  - delivery lag, backend answer → notification at the client (wall clock, same host), releases of ${p.releaseBatch} tasks at ${p.completionsPerSecond} completions/s (${p.offeredPerSecond} asked) over ${p.releaseSeconds} s, other processes using ${p.foreign.foreignCores} cores meanwhile (load average ${p.foreign.loadavg1.toFixed(1)}): ${lag}; ${p.delivered} completions delivered, ${otherEndsText(p)}${p.missing} ends missing${p.missing ? ` (tasks/get of ${Object.values(p.missingByPoll).reduce((a, b) => a + b, 0)} of them: ${Object.entries(p.missingByPoll).map(([s, n]) => `${n} ${s}`).join(', ')})` : ''}, ${p.cleanEnds} of ${p.listeners} streams ended with the listen's response`,
    `  - the listener replica's taskgate_push_delivery_lag_seconds (its lastUpdatedAt → the write): ${gateway}`,
    `  - listener replica heap after GC: ${mib(m.before.heapUsed)} → ${mib(m.open.heapUsed)} with every listener open: **${m.heapBytesPerSubscription} B per open subscription** (${m.heapBytesPerTaskId} B per task id); RSS ${m.rssBytesPerSubscription} B, external + array buffers ${m.externalBytesPerSubscription} B per subscription`,
  ].join('\n');
}

export function pushText(check: PushCheck | { skipped: string }): string {
  if ('phases' in check) return [...check.phases.map(phaseText), ...check.skipped.map((s) => `- ${s.setup} skipped: ${s.reason}`)].join('\n') || '- nothing measured';
  return `- skipped: ${check.skipped}`;
}

/** What `npm run bench -- --push` writes: the push measurement alone, with its machine and settings. */
export interface PushReport {
  schema: 'taskgate-bench-push/1';
  generatedAt: string;
  mode: string;
  command: string;
  revision: string;
  machine: MachineInfo;
  pinning: string;
  settings: { listeners: number; tasksPerListener: number; releaseBatch: number; releasesPerSecond: number };
  push: PushCheck;
  durationSeconds: number;
}

export function renderPushMarkdown(report: PushReport): string {
  const m = report.machine;
  return [
    `Run ${report.generatedAt} (${report.mode}, ${report.durationSeconds} s) on revision ${report.revision}: \`${report.command}\``,
    '',
    `- machine: ${m.nproc} × ${m.cpuModel}, ${mib(m.memoryBytes)}, Linux ${m.kernel}, Node ${m.node}; load average at start ${m.loadavgAtStart.map((v) => v.toFixed(2)).join(' ')}`,
    `- ${report.pinning}`,
    '',
    '**Status push**:',
    '',
    pushText(report.push),
  ].join('\n');
}
