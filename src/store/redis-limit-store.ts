/**
 * Per-principal limits in Redis, shared by every replica. Each operation is one script (one
 * round trip, atomic); all of one principal's keys share a hash slot, so Cluster runs them too:
 *
 *   <prefix>limit:{<owner digest>}:rate:<key digest>:<window start>   counter of a fixed window
 *   <prefix>limit:{<owner digest>}:slots:<key digest>                 sorted set: slot id → lapse time
 *   <prefix>limit:{<owner digest>}:refusals                           refused lookups in the window
 *   <prefix>limit:{<owner digest>}:suspended                          present while suspended
 *
 * Every key has a TTL: a window lives to its end, a slot set as long as its newest slot, so a
 * replica that crashed holding slots frees them after the slot's safety TTL at the latest.
 */
import { createHash } from 'node:crypto';
import type { Result } from 'ioredis';
import type { LimitClaim, LimitStore, LimitVerdict, RefusalCount } from './limit-store.js';
import type { RedisClient } from './redis-connection.js';
import { pxTtl } from './redis-keys.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    taskgateAcquireLimits(...keysAndArgs: (string | number)[]): Result<(string | number)[], Context>;
    taskgateReleaseSlots(...keysAndArgs: string[]): Result<number, Context>;
    taskgateCountRefusal(...keysAndArgs: string[]): Result<[number, number], Context>;
  }
}

/**
 * KEYS: the rate windows, then the slot sets. ARGV: number of windows, now, slot id, slot TTL,
 * then (limit, window end) per window, then max per slot set. Checks everything before it
 * changes anything, so a refusal leaves every count as it was.
 */
const ACQUIRE = `
local n_rates = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local slot_ttl = tonumber(ARGV[4])
for i = 1, n_rates do
  local count = tonumber(redis.call('GET', KEYS[i]) or '0')
  if count >= tonumber(ARGV[3 + i * 2]) then return {'rate', i - 1, tonumber(ARGV[4 + i * 2]) - now} end
end
local first_max = 5 + n_rates * 2
for j = n_rates + 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[j], '-inf', now)
  if redis.call('ZCARD', KEYS[j]) >= tonumber(ARGV[first_max + j - n_rates - 1]) then return {'concurrency', j - n_rates - 1, 0} end
end
for i = 1, n_rates do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[4 + i * 2]) - now) end
end
for j = n_rates + 1, #KEYS do
  redis.call('ZADD', KEYS[j], now + slot_ttl, ARGV[3])
  if redis.call('PTTL', KEYS[j]) < slot_ttl then redis.call('PEXPIRE', KEYS[j], slot_ttl) end
end
return {'ok'}`;

const RELEASE = `
for i = 1, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
return 0`;

/** KEYS: refusals, suspended. ARGV: threshold, window. The window starts at the first refusal. */
const COUNT_REFUSAL = `
local count = redis.call('INCR', KEYS[1])
local ttl = tonumber(ARGV[2])
-- The first refusal opens the window: its end is the window itself (a PTTL read back right
-- after the PEXPIRE may already say a millisecond less).
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then ttl = left else redis.call('PEXPIRE', KEYS[1], ttl) end
end
if count >= tonumber(ARGV[1]) then redis.call('SET', KEYS[2], '1', 'PX', ttl) end
return {count, ttl}`;

/** A held slot is assumed to free within this long: the Retry-After of a concurrency refusal. */
const CONCURRENCY_RETRY_MS = 1000;

export class RedisLimitStore implements LimitStore {
  private readonly digests = new Map<string, string>();

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    /** The store's fail-closed wrapper: refused at once while Redis is away, 503 on failure. */
    private readonly run: <T>(operation: () => Promise<T>) => Promise<T>,
  ) {
    client.defineCommand('taskgateAcquireLimits', { lua: ACQUIRE });
    client.defineCommand('taskgateReleaseSlots', { lua: RELEASE });
    client.defineCommand('taskgateCountRefusal', { numberOfKeys: 2, lua: COUNT_REFUSAL });
  }

  async acquire(claim: LimitClaim): Promise<LimitVerdict> {
    const { now } = claim;
    const tag = this.tag(claim.owner);
    const keys: string[] = [];
    const rateArgs: number[] = [];
    for (const rule of claim.rates) {
      const start = now - (now % rule.windowMs);
      keys.push(`${tag}:rate:${this.digest(rule.key)}:${start}`);
      rateArgs.push(rule.limit, start + rule.windowMs);
    }
    for (const rule of claim.slots) keys.push(`${tag}:slots:${this.digest(rule.key)}`);
    const args = [claim.rates.length, now, claim.slotId, pxTtl(claim.slotTtlMs), ...rateArgs, ...claim.slots.map((rule) => rule.max)];
    const [verdict, index, retryAfterMs] = await this.run(() => this.client.taskgateAcquireLimits(keys.length, ...keys, ...args));
    if (verdict === 'ok') return { allowed: true };
    if (verdict === 'rate') return { allowed: false, kind: 'rate', index: Number(index), retryAfterMs: Number(retryAfterMs) };
    return { allowed: false, kind: 'concurrency', index: Number(index), retryAfterMs: CONCURRENCY_RETRY_MS };
  }

  async release(owner: string, slotKeys: readonly string[], slotId: string, _now: number): Promise<void> {
    if (slotKeys.length === 0) return;
    const tag = this.tag(owner);
    const keys = slotKeys.map((key) => `${tag}:slots:${this.digest(key)}`);
    await this.run(() => this.client.taskgateReleaseSlots(String(keys.length), ...keys, slotId));
  }

  async countRefusal(owner: string, threshold: number, windowMs: number, now: number): Promise<RefusalCount> {
    const tag = this.tag(owner);
    const [count, ttl] = await this.run(() => this.client.taskgateCountRefusal(`${tag}:refusals`, `${tag}:suspended`, String(threshold), String(pxTtl(windowMs))));
    return { count: Number(count), resetAt: now + Number(ttl) };
  }

  async suspendedFor(owner: string, _now: number): Promise<number> {
    const ttl = await this.run(() => this.client.pttl(`${this.tag(owner)}:suspended`));
    return ttl > 0 ? ttl : 0;
  }

  async suspend(owner: string, until: number, now: number): Promise<void> {
    const key = `${this.tag(owner)}:suspended`;
    await this.run(async () => {
      if (until > now) await this.client.set(key, 'operator', 'PX', pxTtl(until - now));
      else await this.client.del(key);
    });
  }

  async unsuspend(owner: string, _now: number): Promise<boolean> {
    return (await this.run(() => this.client.del(`${this.tag(owner)}:suspended`))) > 0;
  }

  private tag(owner: string): string {
    return `${this.prefix}limit:{${this.digest(owner)}}`;
  }

  private digest(text: string): string {
    let digested = this.digests.get(text);
    if (digested === undefined) {
      digested = digest(text);
      // Cleared whole when full: simpler than an LRU, and a miss costs only one hash.
      if (this.digests.size >= MEMO_ENTRIES) this.digests.clear();
      this.digests.set(text, digested);
    }
    return digested;
  }
}

/** Digests kept per store: the same principals and rule keys come back on every call. */
const MEMO_ENTRIES = 10_000;

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 32);
}
