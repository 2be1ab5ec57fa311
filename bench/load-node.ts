/**
 * The fallback load generator, used where wrk is missing (and by the CI smoke test): an undici
 * Pool with one connection per virtual user, each sending its next request as soon as the last
 * reply has been read in full, for a fixed time or a fixed count. It runs in its own process on
 * the load core so that it never shares the proxy's core.
 *
 * Env BENCH_LOAD_FILE: a JSON file { url, specs: [{headers, body}], connections, durationMs?, count? }
 * (a file, because a thousand bearer tokens do not fit in one environment variable).
 * Prints one JSON line: the same shape the wrk script prints.
 */
import { readFileSync } from 'node:fs';
import { createHistogram } from 'node:perf_hooks';
import { Pool } from 'undici';

interface LoadInput {
  url: string;
  specs: { headers: Record<string, string>; body: string; method?: 'GET' | 'POST' }[];
  connections: number;
  durationMs?: number;
  count?: number;
}

const input = JSON.parse(readFileSync(process.env.BENCH_LOAD_FILE ?? '', 'utf8')) as LoadInput;
const target = new URL(input.url);
const pool = new Pool(target.origin, { connections: input.connections, pipelining: 1 });
const histogram = createHistogram();
const errors = { connect: 0, read: 0, write: 0, status: 0, timeout: 0 };
let next = 0;
let done = 0;
let bytes = 0;
const started = performance.now();
const deadline = input.durationMs === undefined ? Infinity : started + input.durationMs;

async function user(): Promise<void> {
  for (;;) {
    if (performance.now() >= deadline) return;
    const index = next++;
    if (input.count !== undefined && index >= input.count) return;
    const spec = input.specs[index % input.specs.length]!;
    const t0 = process.hrtime.bigint();
    try {
      const method = spec.method ?? 'POST';
      const res = await pool.request({ path: target.pathname, method, headers: spec.headers, body: method === 'GET' ? undefined : spec.body });
      bytes += (await res.body.arrayBuffer()).byteLength;
      if (res.statusCode > 399) errors.status++;
    } catch {
      errors.read++;
      continue;
    }
    // Nanoseconds, as wrk reports microseconds below; at least 1 (the histogram's floor).
    histogram.record(Math.max(1, Number(process.hrtime.bigint() - t0)));
    done++;
  }
}

await Promise.all(Array.from({ length: input.connections }, () => user()));
const seconds = (performance.now() - started) / 1000;
await pool.close();
const us = (p: number): number => Math.round(histogram.percentile(p) / 1000);
process.stdout.write(
  `${JSON.stringify({
    requests: done,
    duration_us: Math.round(seconds * 1e6),
    bytes,
    errors,
    latency_us: { p50: us(50), p90: us(90), p99: us(99), mean: Math.round(histogram.mean / 100) / 10, max: Math.round(histogram.max / 1000) },
  })}\n`,
);
