/**
 * The Lua scripts of provided tasks (redis-provided.ts), beside the store's own
 * (redis-scripts.ts), whose library they share. As there, every key a script names shares one
 * hash slot, except in the `Indexed` variants that standalone and Sentinel use: those also
 * name the `leases` index, which in a Cluster is a step of its own.
 *
 * A provided task's keys: the record (with its revision in the field `rev`), the sealed
 * state, the lease (holder, until); all three live exactly as long as the record.
 */
import type { Cluster, Redis, Result } from 'ioredis';
import { LIBRARY } from './redis-scripts.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    taskgateCreateProvidedTask(...keysAndArgs: string[]): Result<string, Context>;
    taskgateWriteProvidedRecord(...keysAndArgs: string[]): Result<number, Context>;
    taskgateReadProvidedTask(...keysAndArgs: string[]): Result<(string | null)[] | null, Context>;
    taskgateWriteProvidedTask(...keysAndArgs: string[]): Result<(string | null)[] | null, Context>;
    taskgateWriteProvidedProgress(...keysAndArgs: string[]): Result<number, Context>;
    taskgateHoldLease(...keysAndArgs: string[]): Result<number, Context>;
    taskgateHoldIndexedLease(...keysAndArgs: string[]): Result<number, Context>;
    taskgateReleaseLease(...keysAndArgs: string[]): Result<number, Context>;
    taskgateReleaseIndexedLease(...keysAndArgs: string[]): Result<number, Context>;
    taskgateCheckLapsedLease(...keysAndArgs: string[]): Result<string[], Context>;
    taskgateIndexLease(...keysAndArgs: string[]): Result<number, Context>;
    taskgateUnindexLease(...keysAndArgs: string[]): Result<number, Context>;
  }
}

const PROVIDED_LIBRARY = `
local TERMINAL = { completed = true, failed = true, cancelled = true }

-- A new provided task's record at revision 1, and its state, for ttl.
local function write_provided(record, provided, ttl, sealed, first)
  write_task(record, ttl, first)
  redis.call('HSET', record, 'rev', 1)
  redis.call('SET', provided, sealed, 'PX', ttl)
end

-- holdLease: refused (false) when the task is gone, expired or terminal, or another holder's
-- lease runs past now; else the lease is the holder's until until_arg, and lives as long as
-- the record, whose remaining life (ms) is returned for the index.
local function hold_lease(record, lease, holder, until_arg, now_arg)
  local now = tonumber(now_arg)
  local task = redis.call('HMGET', record, 'status', 'expiresAt')
  if not task[1] or TERMINAL[task[1]] or tonumber(task[2]) <= now then return false end
  local held = redis.call('HMGET', lease, 'holder', 'until')
  if held[1] and held[1] ~= holder and tonumber(held[2]) > now then return false end
  local ttl = redis.call('PTTL', record)
  if ttl <= 0 then return false end
  redis.call('HSET', lease, 'holder', holder, 'until', until_arg)
  redis.call('PEXPIRE', lease, ttl)
  return ttl
end

local function release_lease(lease, holder)
  if redis.call('HGET', lease, 'holder') ~= holder then return false end
  redis.call('DEL', lease)
  return true
end

local function index_lease(leases, handle, until_arg, ttl)
  redis.call('ZADD', leases, until_arg, handle)
  extend(leases, tonumber(ttl))
end
`;

interface ScriptDefinition {
  readonly keys: number;
  readonly body: string;
}

const SCRIPTS = {
  // taskgateCreateTask (redis-scripts.ts) with the state. KEYS: owner live, owner tasks,
  // record, backend, expiry, provided. ARGV: as taskgateCreateTask's up to the key TTL, then
  // the sealed state, then the record's field/value pairs. Standalone and Sentinel only.
  taskgateCreateProvidedTask: {
    keys: 6,
    body: `
local ttl = tonumber(ARGV[7])
if not reserve_owner(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ttl) then return 'owner-limit' end
write_provided(KEYS[3], KEYS[6], ttl, ARGV[8], 9)
redis.call('SET', KEYS[4], ARGV[4], 'PX', ttl)
index_expiry(KEYS[5], ARGV[3], ARGV[4], ttl)
return 'created'`,
  },
  // Cluster creation, step two, in the handle's slot. KEYS: record, provided. ARGV: ttl,
  // sealed state, field/value pairs.
  taskgateWriteProvidedRecord: {
    keys: 2,
    body: `
write_provided(KEYS[1], KEYS[2], tonumber(ARGV[1]), ARGV[2], 3)
return 1`,
  },
  // The record, its state and its revision as one step wrote them. KEYS: record, provided.
  // Returns nil when there is no record, else {rev, sealed state, fields...}.
  taskgateReadProvidedTask: {
    keys: 2,
    body: `
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return false end
local reply = { redis.call('HGET', KEYS[1], 'rev'), redis.call('GET', KEYS[2]) }
for _, value in ipairs(fields) do reply[#reply + 1] = value end
return reply`,
  },
  // writeProvidedTask: only at revision ARGV[1], on a task not expired at ARGV[2] and not
  // terminal (a task that ended never changes). A patch to another status (ARGV[3], '' if none)
  // drops the poll state and snapshot (not the poll activity). KEYS: the task's own keys (ownKeys). ARGV: rev, now,
  // status, sealed state, then the update as patch_task reads it from ARGV[5]. Returns nil
  // when refused, else as taskgateUpdateTask.
  taskgateWriteProvidedTask: {
    keys: 5,
    body: `
local current = redis.call('HMGET', KEYS[1], 'rev', 'expiresAt', 'status')
if current[1] ~= ARGV[1] or tonumber(current[2]) <= tonumber(ARGV[2]) or TERMINAL[current[3]] then return false end
if ARGV[3] ~= '' and ARGV[3] ~= current[3] then forget_poll(KEYS[2], KEYS[3]) end
local before = patch_task(KEYS, 5)
redis.call('HINCRBY', KEYS[1], 'rev', 1)
redis.call('SET', KEYS[4], ARGV[4], 'PX', redis.call('PTTL', KEYS[1]))
local reply = { before[1], before[2] }
for _, value in ipairs(redis.call('HGETALL', KEYS[1])) do reply[#reply + 1] = value end
return reply`,
  },
  // writeProvidedProgress: statusMessage and lastUpdatedAtIso of a provided task that is
  // neither terminal nor expired at ARGV[1]. KEYS: record. ARGV: now, statusMessage,
  // lastUpdatedAtIso. Returns 1, or 0 when refused.
  taskgateWriteProvidedProgress: {
    keys: 1,
    body: `
local task = redis.call('HMGET', KEYS[1], 'kind', 'status', 'expiresAt')
if task[1] ~= 'provided' or not task[2] or TERMINAL[task[2]] or tonumber(task[3]) <= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'statusMessage', ARGV[2], 'lastUpdatedAtIso', ARGV[3])
return 1`,
  },
  // Cluster: the lease alone; the index is the caller's next step. KEYS: record, lease.
  // ARGV: holder, until, now. Returns the record's remaining life (ms), 0 when refused.
  taskgateHoldLease: {
    keys: 2,
    body: `
return hold_lease(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]) or 0`,
  },
  // Standalone and Sentinel: lease and index in one step. KEYS: record, lease, leases.
  // ARGV: holder, until, now, handle. Returns 1, or 0 when refused.
  taskgateHoldIndexedLease: {
    keys: 3,
    body: `
local ttl = hold_lease(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
if not ttl then return 0 end
index_lease(KEYS[3], ARGV[4], ARGV[2], ttl)
return 1`,
  },
  // Cluster: the index entry stays, and takeLapsedLeases drops it (the lease is gone).
  // KEYS: lease. ARGV: holder.
  taskgateReleaseLease: {
    keys: 1,
    body: `
if release_lease(KEYS[1], ARGV[1]) then return 1 end
return 0`,
  },
  // KEYS: lease, leases. ARGV: holder, handle.
  taskgateReleaseIndexedLease: {
    keys: 2,
    body: `
if not release_lease(KEYS[1], ARGV[1]) then return 0 end
redis.call('ZREM', KEYS[2], ARGV[2])
return 1`,
  },
  // A lease the index says is due, checked against the lease itself. KEYS: record, lease.
  // ARGV: now, claim end, the holder name of a taken lease. Returns {'dropped'} (released, or
  // the task is gone, expired or terminal: the lease is deleted), {'live', until, ttl}
  // (renewed: the index is behind), or {'lapsed'}: the lease is now held by the taker until
  // the claim ends, so its old holder can no longer renew it, and it lapses again (to be
  // handed out again) if the taker ends the task no sooner.
  taskgateCheckLapsedLease: {
    keys: 2,
    body: `
local held = redis.call('HMGET', KEYS[2], 'holder', 'until')
if not held[1] then return { 'dropped' } end
local task = redis.call('HMGET', KEYS[1], 'status', 'expiresAt')
if not task[1] or TERMINAL[task[1]] or tonumber(task[2]) <= tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[2])
  return { 'dropped' }
end
if tonumber(held[2]) >= tonumber(ARGV[1]) then return { 'live', held[2], tostring(redis.call('PTTL', KEYS[1])) } end
redis.call('HSET', KEYS[2], 'holder', ARGV[3], 'until', ARGV[2])
return { 'lapsed' }`,
  },
  // KEYS: leases. ARGV: handle, until, ttl.
  taskgateIndexLease: {
    keys: 1,
    body: `
index_lease(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return 1`,
  },
  // Drops a claimed entry, unless a hold has indexed the handle again since the claim (its
  // score is then no longer the claim's end). KEYS: leases. ARGV: handle, claim end.
  taskgateUnindexLease: {
    keys: 1,
    body: `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
return 1`,
  },
} as const satisfies Record<string, ScriptDefinition>;

export function defineProvidedScripts(client: Redis | Cluster): void {
  for (const [name, { keys, body }] of Object.entries(SCRIPTS)) {
    client.defineCommand(name, { numberOfKeys: keys, lua: `${LIBRARY}\n${PROVIDED_LIBRARY}\n${body}` });
  }
}
