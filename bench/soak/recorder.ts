/**
 * Every request the soak's client made: counted per minute with its latency (histograms of
 * node:perf_hooks, so p99 per minute costs no list of samples), and each one that was not `ok`
 * kept with its time and what it concerned, so the report can say which errors were the
 * documented answers to a fault and which were not.
 */
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { OK } from './wire.js';

export type RequestKind = 'initialize' | 'create' | 'poll' | 'result' | 'cancel';

export interface ErrorEvent {
  /** Epoch ms when the request was sent, and when its answer (or the failure) came. */
  sentAt: number;
  at: number;
  kind: RequestKind;
  cls: string;
  replica: string;
  /** The backend instance the request concerned: a task's, or a 2025 session's; undefined for new work. */
  instance?: string;
  /** `provided` (a task the gateway runs) or `backend`. */
  taskKind: 'provided' | 'backend';
  /** For a request about one task: when its TTL ends (a not-found after it is the documented answer). */
  ttlEndsAt?: number;
}

interface Minute {
  requests: number;
  errors: number;
  all: RecordableHistogram;
  poll: RecordableHistogram;
  create: RecordableHistogram;
}

export interface MinuteRow {
  minute: number;
  requests: number;
  perSecond: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  pollP99Ms: number | null;
  createP99Ms: number | null;
}

const ms = (h: RecordableHistogram, p: number): number => Math.round(h.percentile(p) / 10) / 100;

export class Recorder {
  readonly errors: ErrorEvent[] = [];
  readonly byKind: Record<string, number> = {};
  private readonly minutes = new Map<number, Minute>();
  total = 0;

  constructor(readonly t0: number) {}

  record(kind: RequestKind, cls: string, latencyMs: number, context: Omit<ErrorEvent, 'sentAt' | 'at' | 'kind' | 'cls'>): void {
    const now = Date.now();
    this.total++;
    this.byKind[kind] = (this.byKind[kind] ?? 0) + 1;
    const index = Math.max(0, Math.floor((now - this.t0) / 60_000));
    let minute = this.minutes.get(index);
    if (!minute) {
      minute = { requests: 0, errors: 0, all: createHistogram(), poll: createHistogram(), create: createHistogram() };
      this.minutes.set(index, minute);
    }
    minute.requests++;
    // Microseconds, at least 1 (the histogram's floor).
    const us = Math.max(1, Math.round(latencyMs * 1000));
    minute.all.record(us);
    if (kind === 'poll') minute.poll.record(us);
    if (kind === 'create') minute.create.record(us);
    if (cls !== OK) {
      minute.errors++;
      this.errors.push({ sentAt: Math.round(now - latencyMs), at: now, kind, cls, ...context });
    }
  }

  /** Errors of `cls` since `since` that `match` accepts: the fault injector waits for the first. */
  seen(cls: string, since: number, match: (event: ErrorEvent) => boolean = () => true): number {
    let n = 0;
    for (let i = this.errors.length - 1; i >= 0 && this.errors[i]!.at >= since; i--) if (this.errors[i]!.cls === cls && match(this.errors[i]!)) n++;
    return n;
  }

  perMinute(lastMinuteMs: number): MinuteRow[] {
    return [...this.minutes.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, m]) => {
        // The last minute may be short: its rate is over the time it covered.
        const seconds = Math.max(1, Math.min(60, (lastMinuteMs - this.t0) / 1000 - index * 60));
        return {
          minute: index,
          requests: m.requests,
          perSecond: Math.round(m.requests / seconds),
          errors: m.errors,
          p50Ms: ms(m.all, 50),
          p99Ms: ms(m.all, 99),
          maxMs: Math.round(m.all.max / 1000),
          pollP99Ms: m.poll.count ? ms(m.poll, 99) : null,
          createP99Ms: m.create.count ? ms(m.create, 99) : null,
        };
      });
  }
}
