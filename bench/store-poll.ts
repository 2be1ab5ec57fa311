/**
 * `tsx bench/store-poll.ts [--polls 20000] [--in-flight 50] [--repeats 5] [--redis-url URL] [--tasks 200] [--live N]`:
 * the store's own share of a forwarded tasks/get, without HTTP: openPoll then recordPoll as
 * the gateway calls them (an unchanged answer, so nothing is written back), on --tasks tasks in turn, for
 * the memory store and (when Redis answers at the URL, default 127.0.0.1:6379, under a key
 * prefix of its own) the Redis store. Prints this process's CPU µs per poll for each repeat:
 * on Redis that is the client side only (ioredis, the socket calls); the script's own time
 * is Redis's (`INFO commandstats`). Loads the tsc build, as the benchmark does. `--live N` holds N
 * tasks in all, of which --tasks are polled (the memory store only): what holding tasks costs a poll.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Store } from '../src/store/store.js';
import type { TaskPatch, TaskRecord } from '../src/task-model/task-record.js';
import { buildGateway } from './targets.js';

const { values: args } = parseArgs({
  options: { polls: { type: 'string', default: '20000' }, 'in-flight': { type: 'string', default: '50' }, repeats: { type: 'string', default: '5' }, 'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379' }, tasks: { type: 'string', default: '200' }, live: { type: 'string' } },
});
const POLLS = Number(args.polls);
const IN_FLIGHT = Number(args['in-flight']);
/** Tasks polled in turn: past 10,000 the Redis store's fixed-fields cache misses on every poll (docs/benchmarks.md "Scale"). */
const TASKS = Number(args.tasks);
/** Tasks held in all; those past TASKS are never polled. */
const LIVE = Math.max(TASKS, Number(args.live ?? TASKS));
const LIMITS = { toleranceMs: 0, abuseFactor: 1_000_000 };
const dist = buildGateway();

function taskRecord(i: number): TaskRecord {
  const now = Date.now();
  const iso = new Date(now).toISOString();
  return {
    handle: randomBytes(24).toString('base64url'), kind: 'backend', owner: `bench-principal-${i % 64}`, upstream: 'tools', instance: 'http://127.0.0.1:3000',
    upstreamPath: '/mcp', upstreamTaskId: randomBytes(16).toString('hex'), era: 'modern', tool: 'slow_scan', protocolVersion: '2026-07-28',
    createdAt: now, createdAtIso: iso, lastUpdatedAtIso: iso, ttlMs: 3_600_000, expiresAt: now + 3_600_000, pollIntervalMs: 0, status: 'working', readOnce: false,
  };
}

/** What a forwarded poll of a running task writes back: the backend said what it said last time. */
function samePatch(record: TaskRecord): TaskPatch {
  return { status: record.status, statusMessage: record.statusMessage, lastUpdatedAtIso: record.lastUpdatedAtIso, ttlMs: record.ttlMs, expiresAt: record.expiresAt, pollIntervalMs: record.pollIntervalMs };
}

async function openStore(kind: 'memory' | 'redis'): Promise<Store> {
  if (kind === 'memory') return new (await import(join(dist, 'store', 'memory-store.js'))).MemoryStore({ maxSessions: 100, maxTasks: Math.max(10_000, LIVE) }) as Store;
  const { redisStoreSchema } = await import(join(dist, 'config', 'sections', 'store.js'));
  // commandTimeout 5s: creating thousands of tasks 100 at a time on a loaded machine outlasts the 500 ms default.
  const config = redisStoreSchema.parse({ type: 'redis', url: args['redis-url'], commandTimeout: '5s', keyPrefix: `taskgate-bench:${randomBytes(4).toString('hex')}:`, snapshotKeys: [{ id: 'bench', key: randomBytes(32).toString('base64') }] });
  const store = new (await import(join(dist, 'store', 'redis-store.js'))).RedisStore(config);
  await store.whenReady();
  return store as Store;
}

/** CPU µs per poll over POLLS polls, IN_FLIGHT at a time, after a warm-up pass of as many. */
async function measure(kind: 'memory' | 'redis'): Promise<number> {
  const store = await openStore(kind);
  const records = Array.from({ length: TASKS }, (_, i) => taskRecord(i));
  const snapshot = JSON.stringify({ taskId: records[0]!.handle, status: 'working', ttl: 3_600_000, pollInterval: 0, resultType: 'complete' });
  for (let i = 0; i < records.length; i += 100) await Promise.all(records.slice(i, i + 100).map((record) => store.createTask(record, LIVE)));
  for (let i = TASKS; i < LIVE; i++) await store.createTask(taskRecord(i), LIVE);
  let next = 0;
  const poller = async (): Promise<void> => {
    while (next < POLLS) {
      const record = records[next++ % TASKS]!;
      const opened = await store.openPoll(record.handle, record, Date.now(), LIMITS);
      if (opened.outcome !== 'polled') throw new Error(`a poll was answered ${opened.outcome}`);
      // Not awaited, as the gateway does for a running task.
      store.recordPoll(opened.record, samePatch(opened.record), snapshot, opened.decision.snapshotTag).catch(() => undefined);
    }
  };
  const pass = async (): Promise<void> => {
    next = 0;
    await Promise.all(Array.from({ length: IN_FLIGHT }, poller));
  };
  await pass();
  const before = process.cpuUsage();
  await pass();
  const used = process.cpuUsage(before);
  for (let i = 0; i < records.length; i += 100) await Promise.all(records.slice(i, i + 100).map((record) => store.deleteTask(record.handle)));
  await store.close();
  return (used.user + used.system) / POLLS;
}

for (const kind of LIVE > TASKS ? (['memory'] as const) : (['memory', 'redis'] as const)) {
  const figures: number[] = [];
  try {
    for (let i = 0; i < Number(args.repeats); i++) figures.push(await measure(kind));
  } catch (error) {
    console.log(`${kind}: not measured (${(error as Error).message})`);
    continue;
  }
  console.log(`${kind}: ${figures.map((f) => f.toFixed(1)).join(', ')} CPU µs per poll (lowest ${Math.min(...figures).toFixed(1)})`);
}
process.exit(0);
