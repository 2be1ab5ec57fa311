/**
 * Event streams through the proxies. Time to first byte: the same small SSE reply, one request
 * at a time on a warm connection, direct and through each proxy; the difference of the medians
 * is what the proxy adds. Flat memory: one large stream (10 MB of events) through taskgate,
 * read by a client that consumes at a fixed pace slower than the backend writes, so a proxy
 * that ignored backpressure would have to hold the rest; taskgate's RSS is sampled throughout.
 */
import { Pool } from 'undici';
import type { MemoryReply } from './child-channel.js';
import { delay } from './children.js';
import { round } from './machine.js';
import { spread, type Spread } from './report.js';
import { toolCall } from './scenarios.js';
import type { Target, TargetName } from './targets.js';

export interface SseCheck {
  streamBytes: number;
  paceBytesPerSecond: number;
  ttfbUs: Partial<Record<TargetName, Spread>>;
  addedTtfbUs: Partial<Record<TargetName, number>>;
  fullSpeed: Partial<Record<TargetName, { seconds: number; mbPerSecond: number; ttfbUs: number }>>;
  taskgateMemory?: { rssBefore: number; rssPeak: number; rssAfter: number; rssGrowth: number; liveBefore: number; livePeak: number; liveGrowth: number; samples: number; flat: boolean };
}

async function readStream(pool: Pool, url: URL, token: string, name: string, args: Record<string, unknown>, paceBytesPerSecond?: number): Promise<{ ttfbUs: number; bytes: number; seconds: number }> {
  const spec = toolCall('2025-11-25', token, name, args);
  const t0 = performance.now();
  const res = await pool.request({ path: url.pathname, method: 'POST', headers: spec.headers, body: spec.body });
  let ttfbUs = 0;
  let bytes = 0;
  for await (const chunk of res.body) {
    if (bytes === 0) ttfbUs = (performance.now() - t0) * 1000;
    bytes += (chunk as Buffer).length;
    if (paceBytesPerSecond) {
      const ahead = (bytes / paceBytesPerSecond) * 1000 - (performance.now() - t0);
      if (ahead > 1) await delay(ahead);
    }
  }
  if (res.statusCode !== 200) throw new Error(`stream answered ${res.statusCode}`);
  return { ttfbUs, bytes, seconds: (performance.now() - t0) / 1000 };
}

export async function checkSse(targets: Target[], token: string, options: { samples: number; streamBytes: number; paceBytesPerSecond: number }): Promise<SseCheck> {
  const result: SseCheck = { streamBytes: options.streamBytes, paceBytesPerSecond: options.paceBytesPerSecond, ttfbUs: {}, addedTtfbUs: {}, fullSpeed: {} };
  for (const target of targets) {
    const url = new URL(target.url);
    const pool = new Pool(url.origin, { connections: 1 });
    try {
      for (let i = 0; i < 5; i++) await readStream(pool, url, token, 'stream', {}); // warm the connection and the JIT
      const ttfb: number[] = [];
      for (let i = 0; i < options.samples; i++) ttfb.push((await readStream(pool, url, token, 'stream', {})).ttfbUs);
      result.ttfbUs[target.name] = spread(ttfb);
      const big = await readStream(pool, url, token, 'big-stream', { bytes: options.streamBytes });
      result.fullSpeed[target.name] = { seconds: round(big.seconds, 3), mbPerSecond: round(big.bytes / 1e6 / big.seconds, 1), ttfbUs: round(big.ttfbUs, 0) };
      if (target.name === 'taskgate-memory' && target.memory) result.taskgateMemory = await sampleDuringStream(target, pool, url, token, options);
    } finally {
      await pool.close();
    }
  }
  const floor = result.ttfbUs.direct?.median;
  if (floor !== undefined) {
    for (const [name, s] of Object.entries(result.ttfbUs)) if (name !== 'direct') result.addedTtfbUs[name as TargetName] = round(s.median - floor, 1);
  }
  return result;
}

/**
 * What taskgate holds while a slow client reads a stream the backend writes at full speed. A
 * proxy ignoring backpressure would hold the unread rest: as Buffers (external memory) or as
 * strings (heap). So each sample is taken after a full GC (the target runs with --expose-gc)
 * and counts live memory, heap used plus external (which includes array buffers): garbage
 * and the V8 heap's own growth are not held bytes. RSS is reported beside it; it moves with
 * the young generation's size and is not the verdict (the 2026-11-30 full run grew RSS by
 * 5.9 MiB while nothing was held).
 */
async function sampleDuringStream(target: Target, pool: Pool, url: URL, token: string, options: { streamBytes: number; paceBytesPerSecond: number }): Promise<SseCheck['taskgateMemory']> {
  const live = (m: MemoryReply): number => m.heapUsed + m.external;
  const before = await target.memory!(true);
  const samples: MemoryReply[] = [];
  let streaming = true;
  const sampler = (async () => {
    while (streaming) {
      samples.push(await target.memory!(true));
      await delay(20);
    }
  })();
  try {
    await readStream(pool, url, token, 'big-stream', { bytes: options.streamBytes }, options.paceBytesPerSecond);
  } finally {
    streaming = false;
    await sampler;
  }
  const after = await target.memory!(true);
  const rssPeak = Math.max(before.rss, ...samples.map((s) => s.rss));
  const livePeak = Math.max(live(before), ...samples.map(live));
  const liveGrowth = livePeak - live(before);
  return {
    rssBefore: before.rss,
    rssPeak,
    rssAfter: after.rss,
    rssGrowth: rssPeak - before.rss,
    liveBefore: live(before),
    livePeak,
    liveGrowth,
    samples: samples.length,
    // Holding the unread rest would hold most of the stream.
    flat: liveGrowth < options.streamBytes / 4,
  };
}
