/**
 * scanLiveTasks for the Redis store: pages through the expiry index (`<prefix>expiry`, every
 * handle by expiresAt, which the store keeps beside every record already), so a listing of
 * every replica's tasks needs no index of its own and no scan of the keyspace. A page is one
 * ZRANGEBYSCORE with LIMIT, then the records in parallel: two round trips. Entries whose record
 * is gone or expired (a sweep claims due handles by moving them a little into the future) are
 * left out; the sweep and the index repairs of redis-store.ts deal with them, not a reader.
 */
import type { RedisClient } from './redis-connection.js';
import type { RedisKeys } from './redis-keys.js';
import { decodeTask } from './redis-task-hash.js';
import { nextLiveTaskCursor } from './live-task-scan.js';
import type { LiveTaskCursor, LiveTaskPage } from './store.js';
import type { TaskRecord } from '../task-model/task-record.js';

export async function scanLiveTasks(client: RedisClient, keys: RedisKeys, after: LiveTaskCursor | undefined, limit: number, now: number): Promise<LiveTaskPage> {
  // The first page starts after now: what expired is the sweeper's, not the listing's.
  const min = after ? String(after.expiresAt) : `(${now}`;
  const flat = await client.zrangebyscore(keys.expiry(), min, '+inf', 'WITHSCORES', 'LIMIT', after?.skip ?? 0, limit);
  const handles: string[] = [];
  const expiries: number[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    handles.push(flat[i]!);
    expiries.push(Number(flat[i + 1]));
  }
  const fields = await Promise.all(handles.map((handle) => client.hgetall(keys.task(handle).record)));
  const records: TaskRecord[] = [];
  for (const hash of fields) {
    const record = decodeTask(hash);
    if (record && record.expiresAt > now) records.push(record);
  }
  const next = nextLiveTaskCursor(after, expiries, limit);
  return { records, ...(next ? { next } : {}) };
}
