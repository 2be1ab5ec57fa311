/**
 * Memory per live task: a fresh taskgate (memory store, --expose-gc) is made to take over
 * `count` tasks created through it against the bench backend, by many principals as real
 * traffic would be; heap and RSS are read after a full GC before and after.
 */
import type { MemoryReply } from './child-channel.js';
import type { NodeChild, Pinning } from './children.js';
import { runNodeLoad } from './load.js';
import { round } from './machine.js';
import { toolCall } from './scenarios.js';
import { startTaskgate } from './targets.js';

export interface MemoryCheck {
  tasks: number;
  principals: number;
  before: MemoryReply;
  after: MemoryReply;
  heapBytesPerTask: number;
  rssBytesPerTask: number;
  /** external + arrayBuffers, which the heap figure does not include. */
  externalBytesPerTask: number;
  creationSeconds: number;
  creationsPerSecond: number;
  errors: number;
  backendCreations: number;
}

async function creations(backend: NodeChild): Promise<number> {
  const stats = (await (await fetch(`${backend.url}/stats`)).json()) as Record<string, number>;
  return stats['tools/call:create-task'] ?? 0;
}

export async function checkTaskMemory(options: { pinning: Pinning; policy: string; tokens: string[]; backend: NodeChild; count: number }): Promise<MemoryCheck> {
  const { pinning, tokens, count } = options;
  const target = await startTaskgate(pinning, 'taskgate-memory', options.policy, ['--expose-gc']);
  try {
    const specs = tokens.map((t) => toolCall('2026-07-28', t, 'create-task', { poll: 'fast' }));
    // One task per principal first: verified tokens, per-owner indexes and JIT are then part of
    // the baseline, not of the per-task cost.
    await runNodeLoad({ url: target.url, specs, connections: 10, seconds: 0, count: tokens.length }, pinning);
    const before = await target.memory!(true);
    const created0 = await creations(options.backend);
    const load = await runNodeLoad({ url: target.url, specs, connections: 50, seconds: 0, count }, pinning);
    const backendCreations = (await creations(options.backend)) - created0;
    const after = await target.memory!(true);
    const per = (a: number, b: number) => round((a - b) / count, 0);
    return {
      tasks: count,
      principals: tokens.length,
      before,
      after,
      heapBytesPerTask: per(after.heapUsed, before.heapUsed),
      rssBytesPerTask: per(after.rss, before.rss),
      externalBytesPerTask: per(after.external + after.arrayBuffers, before.external + before.arrayBuffers),
      creationSeconds: round(load.seconds, 2),
      creationsPerSecond: round(load.rps, 0),
      errors: load.errors,
      backendCreations,
    };
  } finally {
    await target.stop();
  }
}
