/**
 * The Redis store's Lua scripts. Each runs atomically on one server, so each is the unit of
 * agreement between replicas; in a Cluster every key a script names must share one hash slot
 * (see redis-keys.ts for which keys share which). ioredis sends them by SHA and loads them
 * on NOSCRIPT, through defineCommand.
 *
 * Numbers travel as decimal strings: epoch milliseconds are exact in Lua's doubles, and
 * passing the caller's string on (rather than a number Lua formats) keeps them byte-exact.
 */
import type { Cluster, Redis, Result } from 'ioredis';
import { LIVE_FIELDS } from './redis-task-hash.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    taskgateCreateTask(...keysAndArgs: string[]): Result<string, Context>;
    taskgateReserveOwner(...keysAndArgs: string[]): Result<string, Context>;
    taskgateWriteTask(...keysAndArgs: string[]): Result<number, Context>;
    taskgateSyncOwner(...keysAndArgs: string[]): Result<number, Context>;
    taskgateSyncBackend(...keysAndArgs: string[]): Result<number, Context>;
    taskgateSyncExpiry(...keysAndArgs: string[]): Result<number, Context>;
    taskgateUpdateTask(...keysAndArgs: string[]): Result<(string | null)[] | null, Context>;
    taskgateRemoveTask(...keysAndArgs: string[]): Result<string[], Context>;
    taskgateClaimExpired(...keysAndArgs: string[]): Result<string[], Context>;
    taskgateOpenPoll(...keysAndArgs: string[]): Result<(string | number | null)[], Context>;
    taskgateRecordPoll(...keysAndArgs: string[]): Result<[string | null, string | null] | null, Context>;
    taskgateForgetPoll(...keysAndArgs: string[]): Result<number, Context>;
    taskgateCountInWindow(...keysAndArgs: string[]): Result<number, Context>;
  }
}

/**
 * Shared by the scripts below (and those of redis-provided-scripts.ts); `local` keeps each
 * script's globals clean (Redis forbids others).
 */
export const LIBRARY = `
local function extend(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end

-- The owner's live count is checked and the new task counted in the same step, so two
-- replicas creating for one owner at once cannot both pass the limit.
local function reserve_owner(live, tasks, now, max_live, expires_at, handle, member, counts, ttl)
  redis.call('ZREMRANGEBYSCORE', live, '-inf', now)
  if redis.call('ZCARD', live) >= tonumber(max_live) then return false end
  if counts == '1' then
    redis.call('ZADD', live, expires_at, handle)
    extend(live, ttl)
  end
  redis.call('ZADD', tasks, 0, member)
  extend(tasks, ttl)
  return true
end

local function write_task(record, ttl, first)
  redis.call('DEL', record)
  redis.call('HSET', record, unpack(ARGV, first))
  redis.call('PEXPIRE', record, ttl)
end

-- Forgets a task's poll clock and snapshot (the next poll is forwarded), keeping its poll
-- activity: the counts and the last poll's time.
local function forget_poll(poll, snapshot)
  redis.call('HDEL', poll, 'last', 'early', 'tag')
  redis.call('DEL', snapshot)
end

local function index_expiry(expiry, expires_at, handle, ttl)
  redis.call('ZADD', expiry, expires_at, handle)
  extend(expiry, ttl)
end

-- Applies an update to a task's record. task: its own keys, record first (ownKeys in
-- redis-keys.ts: a new lifetime moves every one of them). ARGV from index first on: ttl for a
-- new expiresAt (or ''), count of set arguments, field/value pairs, fields to remove. Returns
-- the status and expiresAt before, or false when there is no record (an update never creates
-- one).
local function patch_task(task, first)
  if redis.call('EXISTS', task[1]) == 0 then return false end
  local before = redis.call('HMGET', task[1], 'status', 'expiresAt')
  local n = tonumber(ARGV[first + 1])
  local pairs_from = first + 2
  if n > 0 then redis.call('HSET', task[1], unpack(ARGV, pairs_from, pairs_from + n - 1)) end
  if #ARGV >= pairs_from + n then redis.call('HDEL', task[1], unpack(ARGV, pairs_from + n)) end
  if ARGV[first] ~= '' and redis.call('HGET', task[1], 'expiresAt') ~= before[2] then
    for i = 1, #task do redis.call('PEXPIRE', task[i], ARGV[first]) end
  end
  return before
end

-- decidePoll (src/task-model/poll-rule.ts), step for step, on the poll state of one task
-- (task: record, poll, snapshot keys). now is the caller's decimal string. State is kept only
-- while the record exists, and lives exactly as long. The same write books the poll activity
-- (store.ts, PollActivity): a count per verdict ('n:' and the verdict) and the time of the
-- poll ('at'). Returns verdict, next lastForwardedAt,
-- next early count, retryAfterMs, the sealed snapshot for a poll that is not forwarded, and
-- for a forwarded one the tag of the snapshot held (false if none), so that the write-back of
-- an answer that has not changed can be skipped.
local function check_poll(task, now_arg, interval_arg, tolerance_arg, abuse_arg)
  local now, interval = tonumber(now_arg), tonumber(interval_arg)
  -- Shorter than the interval, or a burst of polls would pass back to back.
  local tolerance = math.min(tonumber(tolerance_arg), math.max(0, interval - 1))
  local state = redis.call('HMGET', task[2], 'last', 'early', 'tag')
  local early = tonumber(state[2] or '0')
  local allowed = now
  if state[1] then allowed = tonumber(state[1]) + interval - tolerance end
  local verdict, last, retry
  if now >= allowed then
    -- Booked at the time it was due (not at arrival), so the tolerance cannot make the
    -- schedule creep earlier cycle by cycle.
    verdict, last, early, retry = 'forward', now_arg, 0, 0
    if state[1] then last = string.format('%.0f', math.max(now, tonumber(state[1]) + interval)) end
  else
    early = early + 1
    if early > tonumber(abuse_arg) then verdict = 'abusive' else verdict = 'early' end
    last, retry = state[1], allowed - now
  end
  local ttl = redis.call('PTTL', task[1])
  if ttl > 0 then
    redis.call('HSET', task[2], 'last', last, 'early', early, 'at', now_arg)
    redis.call('HINCRBY', task[2], 'n:' .. verdict, 1)
    redis.call('PEXPIRE', task[2], ttl)
  end
  local snapshot, tag = false, false
  if verdict ~= 'forward' then
    snapshot = redis.call('GET', task[3])
  elseif state[3] and redis.call('EXISTS', task[3]) == 1 then
    tag = state[3]
  end
  return { verdict, last, early, retry, snapshot, tag }
end
`;

interface ScriptDefinition {
  readonly keys: number;
  readonly body: string;
}

/**
 * ARGV layout of a creation: now, maxLive, expiresAt, handle, list member, counts (1 when the
 * task is not terminal), key TTL, then the record's field/value pairs.
 */
const SCRIPTS = {
  // KEYS: owner live, owner tasks, record, backend, expiry. Standalone and Sentinel only: in
  // a Cluster these keys live in different slots.
  taskgateCreateTask: {
    keys: 5,
    body: `
local ttl = tonumber(ARGV[7])
if not reserve_owner(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ttl) then return 'owner-limit' end
write_task(KEYS[3], ttl, 8)
redis.call('SET', KEYS[4], ARGV[4], 'PX', ttl)
index_expiry(KEYS[5], ARGV[3], ARGV[4], ttl)
return 'created'`,
  },
  // Cluster creation, step one, in the owner's slot. KEYS: owner live, owner tasks.
  taskgateReserveOwner: {
    keys: 2,
    body: `
if not reserve_owner(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7])) then return 'owner-limit' end
return 'reserved'`,
  },
  // Cluster creation, step two, in the handle's slot. KEYS: record. ARGV: ttl, field/value pairs.
  taskgateWriteTask: {
    keys: 1,
    body: `
write_task(KEYS[1], tonumber(ARGV[1]), 2)
return 1`,
  },
  // Brings an owner's entries in line with the record. KEYS: owner live, owner tasks.
  // ARGV: handle, list member, live (1/0), listed (1/0), expiresAt, ttl.
  taskgateSyncOwner: {
    keys: 2,
    body: `
local ttl = tonumber(ARGV[6])
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[1], ARGV[5], ARGV[1])
  extend(KEYS[1], ttl)
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[2], 0, ARGV[2])
  extend(KEYS[2], ttl)
else
  redis.call('ZREM', KEYS[2], ARGV[2])
end
return 1`,
  },
  // The backend id may since point at another task; only this task's entry is touched.
  // KEYS: backend. ARGV: handle, ttl ('' deletes).
  taskgateSyncBackend: {
    keys: 1,
    body: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`,
  },
  // KEYS: expiry. ARGV: handle, expiresAt ('' removes), ttl.
  taskgateSyncExpiry: {
    keys: 1,
    body: `
if ARGV[2] == '' then redis.call('ZREM', KEYS[1], ARGV[1]) else index_expiry(KEYS[1], ARGV[2], ARGV[1], tonumber(ARGV[3])) end
return 1`,
  },
  // KEYS: the task's own keys (ownKeys). ARGV: the update, as patch_task reads it from
  // ARGV[1]. Returns the status and expiresAt before, then the record after; nil when there is
  // no record.
  taskgateUpdateTask: {
    keys: 5,
    body: `
local before = patch_task(KEYS, 1)
if not before then return false end
local reply = { before[1], before[2] }
for _, value in ipairs(redis.call('HGETALL', KEYS[1])) do reply[#reply + 1] = value end
return reply`,
  },
  // Deletes a task's own keys (ownKeys: a provided task's state and lease go with it),
  // unconditionally or (ARGV[1] = now) only once it has expired. Returns {'gone'},
  // {'live', expiresAt} or {'removed', fields...}.
  taskgateRemoveTask: {
    keys: 5,
    body: `
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return { 'gone' } end
if ARGV[1] ~= '' then
  local expires_at = redis.call('HGET', KEYS[1], 'expiresAt')
  if tonumber(expires_at) > tonumber(ARGV[1]) then return { 'live', expires_at } end
end
redis.call('DEL', unpack(KEYS))
local reply = { 'removed' }
for _, value in ipairs(fields) do reply[#reply + 1] = value end
return reply`,
  },
  // Hands due handles to one sweeper: they are leased (re-scored to the lease's end) rather
  // than removed, so a sweeper that dies before finishing leaves them for the next one.
  // KEYS: expiry. ARGV: now, limit, lease end, lease ttl.
  taskgateClaimExpired: {
    keys: 1,
    body: `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, handle in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[3], handle) end
if #due > 0 then extend(KEYS[1], tonumber(ARGV[4])) end
return due`,
  },
  // A tasks/get on the way in: lookup, scope check and poll decision in one step. KEYS:
  // record, poll, snapshot. ARGV: now, owner, era, upstream, toleranceMs, abuseFactor, and the
  // createdAt of the record whose fixed fields the caller holds ('' for none). Returns
  // {'not_found'} (unknown, or expired at now), {'denied'} (another owner, era or upstream),
  // neither touching the poll state; else {'polled'}, check_poll's six values on the record's
  // own pollIntervalMs, then either 'live' and the LIVE_FIELDS values (redis-task-hash.ts),
  // when the caller's createdAt is this record's, or 'full' and the record's fields. The
  // scope is checked here, on the stored record, whatever the caller holds.
  taskgateOpenPoll: {
    keys: 3,
    body: `
local live = { ${LIVE_FIELDS.map((field) => `'${field}'`).join(', ')} }
local head = redis.call('HMGET', KEYS[1], 'owner', 'era', 'upstream', 'createdAt', unpack(live))
local expires_at = head[${4 + LIVE_FIELDS.indexOf('expiresAt') + 1}]
if not expires_at or tonumber(expires_at) <= tonumber(ARGV[1]) then return { 'not_found' } end
if head[1] ~= ARGV[2] or head[2] ~= ARGV[3] or head[3] ~= ARGV[4] then return { 'denied' } end
local reply = check_poll(KEYS, ARGV[1], head[${4 + LIVE_FIELDS.indexOf('pollIntervalMs') + 1}], ARGV[5], ARGV[6])
table.insert(reply, 1, 'polled')
if ARGV[7] ~= '' and head[4] == ARGV[7] then
  reply[8] = 'live'
  for i = 1, #live do reply[8 + i] = head[4 + i] end
else
  reply[8] = 'full'
  for _, value in ipairs(redis.call('HGETALL', KEYS[1])) do reply[#reply + 1] = value end
end
return reply`,
  },
  // A forwarded tasks/get on the way back: taskgateUpdateTask's update and the poll snapshot
  // in one step. KEYS: the task's own keys (ownKeys). ARGV: sealed snapshot, its tag, then the update
  // as patch_task reads it from ARGV[3]. The snapshot (and its tag, in the poll state) is kept
  // only while the record exists, and lives as long. Returns the status and expiresAt before;
  // nil when there is no record.
  taskgateRecordPoll: {
    keys: 5,
    body: `
local before = patch_task(KEYS, 3)
if not before then return false end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ttl)
  redis.call('HSET', KEYS[2], 'tag', ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return before`,
  },
  // invalidatePoll. KEYS: poll, snapshot.
  taskgateForgetPoll: {
    keys: 2,
    body: `
forget_poll(KEYS[1], KEYS[2])
return 1`,
  },
  // KEYS: window counter. ARGV: ttl until the window ends.
  taskgateCountInWindow: {
    keys: 1,
    body: `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`,
  },
} as const satisfies Record<string, ScriptDefinition>;

export function defineStoreScripts(client: Redis | Cluster): void {
  for (const [name, { keys, body }] of Object.entries(SCRIPTS)) {
    client.defineCommand(name, { numberOfKeys: keys, lua: `${LIBRARY}\n${body}` });
  }
}
