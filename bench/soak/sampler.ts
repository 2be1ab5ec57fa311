/**
 * Memory over time, read the way an operator's Prometheus reads it: each replica's admin
 * `/metrics` (`taskgate_process_resident_memory_bytes`, `taskgate_nodejs_heap_size_used_bytes`),
 * per process incarnation (a replica started again is a new series), and Redis's own
 * `INFO memory`. The gateway's counters (polls by outcome, store and upstream errors, provided
 * tasks ended) are kept from each incarnation's latest scrape. Slopes are least-squares lines
 * through the samples taken after the fill, in MiB per minute.
 */
import { Redis } from 'ioredis';
import type { RedisProcess, Replica } from './processes.js';

export interface MemorySample {
  /** Seconds from the start of the fill. */
  t: number;
  rss: number;
  heap: number;
}

export interface Incarnation {
  pid: number;
  samples: MemorySample[];
  /** The counters of its latest scrape: `name{labels}` → value. */
  counters: Record<string, number>;
}

export interface MemorySeries {
  name: string;
  incarnations: Incarnation[];
}

/** The counters kept from each scrape (everything else in /metrics is dropped). */
const COUNTERS = /^taskgate_(polls_total|store_errors_total|upstream_errors_total|provided_tasks_ended_total|tasks_created_total|provided_lease_takeovers_total)\b/;
const LINE = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/;

export function parseMetrics(text: string): { rss?: number; heap?: number; counters: Record<string, number> } {
  const out: { rss?: number; heap?: number; counters: Record<string, number> } = { counters: {} };
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const [, name, labels = '', value] = match;
    if (name === 'taskgate_process_resident_memory_bytes') out.rss = Number(value);
    else if (name === 'taskgate_nodejs_heap_size_used_bytes') out.heap = Number(value);
    else if (COUNTERS.test(name!)) out.counters[`${name}${labels}`] = Number(value);
  }
  return out;
}

export class Sampler {
  readonly replicas: MemorySeries[];
  readonly redis: { t: number; usedMemory: number; rss: number; keys: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private redisClient: Redis | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly t0: number,
    private readonly everyMs: number,
    private readonly gateways: Replica[],
    redis: RedisProcess | undefined,
  ) {
    this.replicas = gateways.map((g) => ({ name: g.name, incarnations: [] }));
    if (redis) {
      // Fails fast while Redis is down: a missed sample, never a queued command.
      this.redisClient = new Redis(redis.url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 250 });
      this.redisClient.on('error', () => undefined);
    }
  }

  start(): void {
    void this.redisClient?.connect().catch(() => undefined);
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.sample());
    }, this.everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    await this.sample();
    this.redisClient?.disconnect();
  }

  private async sample(): Promise<void> {
    const t = Math.round((Date.now() - this.t0) / 100) / 10;
    await Promise.all(this.gateways.map(async (gateway, i) => {
      const pid = gateway.pid;
      const res = await fetch(`${gateway.adminUrl}/metrics`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      const text = res?.ok ? await res.text().catch(() => '') : '';
      const parsed = parseMetrics(text);
      if (pid === undefined || parsed.rss === undefined || parsed.heap === undefined) return;
      const series = this.replicas[i]!;
      let incarnation = series.incarnations.at(-1);
      if (incarnation?.pid !== pid) series.incarnations.push((incarnation = { pid, samples: [], counters: {} }));
      incarnation.samples.push({ t, rss: parsed.rss, heap: parsed.heap });
      incarnation.counters = parsed.counters;
    }));
    if (this.redisClient?.status === 'ready') {
      const info = await this.redisClient.info('memory').catch(() => '');
      const keys = await this.redisClient.dbsize().catch(() => -1);
      const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN);
      if (info) this.redis.push({ t, usedMemory: field('used_memory'), rss: field('used_memory_rss'), keys });
    }
  }
}

/** The least-squares slope of `value` over `t` (seconds), in units per minute; null with fewer than 3 points. */
export function slopePerMinute(points: { t: number; value: number }[]): number | null {
  if (points.length < 3) return null;
  const n = points.length;
  const meanT = points.reduce((s, p) => s + p.t, 0) / n;
  const meanV = points.reduce((s, p) => s + p.value, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - meanT) * (p.value - meanV);
    den += (p.t - meanT) ** 2;
  }
  return den === 0 ? null : (num / den) * 60;
}
