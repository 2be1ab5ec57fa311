/**
 * The history behind the console's plots, kept in memory and bounded (one hour at
 * SAMPLE_MS): live tasks by status, from the scans (of every replica's tasks on a shared
 * store), this replica's poll outcomes, from taskgate_polls_total, and this replica's push
 * delivery lag, from taskgate_push_delivery_lag_seconds. A sampler ticks every
 * SAMPLE_MS while the console is on and scans the store itself only when no viewer made it do
 * so lately (at most every IDLE_SCAN_MS), so the plot has a past when someone opens it.
 */
import type { GatewayMetrics } from '../observability/metrics.js';
import type { TaskStatus } from '../task-model/task-record.js';
import type { LiveTasks } from './live-scan.js';

export const SAMPLE_MS = 10_000;
/** Without viewers, the store is scanned for a sample this often at most. */
export const IDLE_SCAN_MS = 30_000;
const KEPT = 360;
const STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const POLL_OUTCOMES = ['forwarded', 'cached', 'rejected'] as const;

export interface StatusSample {
  readonly at: number;
  readonly counts: Readonly<Record<TaskStatus, number>>;
}

interface PollTotals {
  readonly at: number;
  readonly totals: Readonly<Record<(typeof POLL_OUTCOMES)[number], number>>;
}

export interface PollRate {
  readonly at: number;
  /** Polls per minute over the interval that ends at `at`, by outcome. */
  readonly perMinute: Readonly<Record<(typeof POLL_OUTCOMES)[number], number>>;
}

/** The lag histogram's totals at one tick: cumulative bucket counts by upper bound (seconds). */
interface LagTotals {
  readonly at: number;
  readonly count: number;
  readonly sum: number;
  readonly buckets: ReadonlyMap<number, number>;
}

export interface LagSample {
  readonly at: number;
  /** Notifications delivered to 2026 listeners over the interval that ends at `at`. */
  readonly deliveries: number;
  /** Their mean lag, and the upper bound of the histogram bucket holding the 95th percentile (ms); null without deliveries. */
  readonly meanMs: number | null;
  readonly p95Ms: number | null;
}

export class ConsoleSamples {
  private readonly statuses: StatusSample[] = [];
  private readonly polls: PollTotals[] = [];
  private readonly lag: LagTotals[] = [];

  /** A scan's counts, at most one sample per SAMPLE_MS (the latest scan in it wins). */
  noteScan(tasks: LiveTasks): void {
    const counts = Object.fromEntries(STATUSES.map((status) => [status, 0])) as Record<TaskStatus, number>;
    for (const record of tasks.records) counts[record.status]++;
    const last = this.statuses.at(-1);
    if (last && tasks.at - last.at < SAMPLE_MS) this.statuses[this.statuses.length - 1] = { at: last.at, counts };
    else push(this.statuses, { at: tasks.at, counts });
  }

  async notePolls(metrics: GatewayMetrics, now: number): Promise<void> {
    const { values } = await metrics.polls.get();
    const totals = Object.fromEntries(POLL_OUTCOMES.map((outcome) => [outcome, 0])) as Record<(typeof POLL_OUTCOMES)[number], number>;
    for (const value of values) {
      const outcome = value.labels.outcome as (typeof POLL_OUTCOMES)[number] | undefined;
      if (outcome !== undefined && outcome in totals) totals[outcome] += value.value;
    }
    push(this.polls, { at: now, totals });
  }

  async noteLag(metrics: GatewayMetrics, now: number): Promise<void> {
    const { values } = await metrics.pushDeliveryLag.get();
    let count = 0;
    let sum = 0;
    const buckets = new Map<number, number>();
    for (const value of values) {
      if (value.metricName?.endsWith('_count')) count += value.value;
      else if (value.metricName?.endsWith('_sum')) sum += value.value;
      else if (value.metricName?.endsWith('_bucket')) {
        const le = value.labels.le === '+Inf' ? Infinity : Number(value.labels.le);
        buckets.set(le, (buckets.get(le) ?? 0) + value.value);
      }
    }
    push(this.lag, { at: now, count, sum, buckets });
  }

  get lastStatusAt(): number | undefined {
    return this.statuses.at(-1)?.at;
  }

  series(): { statuses: readonly StatusSample[]; polls: readonly PollRate[]; lag: readonly LagSample[] } {
    const polls: PollRate[] = [];
    for (let i = 1; i < this.polls.length; i++) {
      const before = this.polls[i - 1]!;
      const after = this.polls[i]!;
      const minutes = (after.at - before.at) / 60_000;
      if (minutes <= 0) continue;
      const perMinute = Object.fromEntries(POLL_OUTCOMES.map((outcome) => [outcome, Math.max(0, (after.totals[outcome] - before.totals[outcome]) / minutes)]));
      polls.push({ at: after.at, perMinute: perMinute as PollRate['perMinute'] });
    }
    return { statuses: this.statuses, polls, lag: lagSeries(this.lag) };
  }
}

function lagSeries(totals: readonly LagTotals[]): LagSample[] {
  const samples: LagSample[] = [];
  for (let i = 1; i < totals.length; i++) {
    const before = totals[i - 1]!;
    const after = totals[i]!;
    const deliveries = after.count - before.count;
    if (deliveries <= 0) {
      samples.push({ at: after.at, deliveries: 0, meanMs: null, p95Ms: null });
      continue;
    }
    const meanMs = ((after.sum - before.sum) / deliveries) * 1000;
    // The first bucket whose count over the interval reaches 95% of it; in the last (+Inf) one,
    // the largest finite bound stands in (the lag was at least that).
    let p95Ms: number | null = null;
    for (const [le, cumulative] of [...after.buckets].sort((a, b) => a[0] - b[0])) {
      if (cumulative - (before.buckets.get(le) ?? 0) >= 0.95 * deliveries) {
        p95Ms = (Number.isFinite(le) ? le : maxFinite(after.buckets)) * 1000;
        break;
      }
    }
    samples.push({ at: after.at, deliveries, meanMs: Math.round(meanMs * 10) / 10, p95Ms });
  }
  return samples;
}

function maxFinite(buckets: ReadonlyMap<number, number>): number {
  return Math.max(0, ...[...buckets.keys()].filter(Number.isFinite));
}

function push<T>(ring: T[], item: T): void {
  ring.push(item);
  if (ring.length > KEPT) ring.shift();
}
