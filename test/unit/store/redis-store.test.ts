/**
 * The Redis store against the shared standalone Redis at 127.0.0.1:6379: the store
 * contract, then what only a shared store has to show (encryption at rest, TTLs on every
 * key, the poll rule in Lua, agreement between two replicas).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import pino from 'pino';
import { parseConfig } from '../../../src/config/index.js';
import { createStore } from '../../../src/store/create-store.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { RedisStore } from '../../../src/store/redis-store.js';
import { decidePoll, type PollRules, type PollState } from '../../../src/task-model/poll-rule.js';
import { defineProvidedContract } from './provided-contract.js';
import { defineStoreContract, pollAsOwner, pollPatch } from './store-contract.js';
import { answersPing, reportMissingRedis, SHARED_REDIS, SharedRedisStores, SNAPSHOT_KEY_1, SNAPSHOT_KEY_2, START_SHARED_REDIS } from '../../support/redis-servers.js';
import { OWNER_A, scopeOf, taskRecord } from '../../support/task-records.js';

const URL = `redis://${SHARED_REDIS.host}:${SHARED_REDIS.port}`;

if (!(await answersPing(SHARED_REDIS.port, SHARED_REDIS.host))) {
  reportMissingRedis(`Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port}`, START_SHARED_REDIS);
} else {
  // Every store of this run lives in one space, removed at the end; each test gets its own prefix.
  const stores = new SharedRedisStores();
  const newStore = (overrides: Record<string, unknown> = {}): Promise<RedisStore> => stores.open(overrides);
  const raw = new Redis(URL, { lazyConnect: true });

  after(async () => {
    await stores.close();
    await raw.quit();
  });

  defineStoreContract('redis (standalone)', { create: () => newStore() });
  defineProvidedContract('redis (standalone)', { create: () => newStore() });

  describe('Redis store', () => {
    it('keeps poll snapshots encrypted at rest, opens them after a key rotation, and deletes them with the task', async () => {
      const prefix = stores.nextPrefix();
      const before = await newStore({ keyPrefix: prefix, snapshotKeys: [SNAPSHOT_KEY_1] });
      const record = taskRecord({ pollIntervalMs: 10_000 });
      await before.createTask(record, 10);
      const limits = { toleranceMs: 0, abuseFactor: 5 };
      const now = Date.now();
      await pollAsOwner(before, record, now, limits);
      const secret = '{"result":{"content":[{"type":"text","text":"the launch code is 0000"}]}}';
      await before.recordPoll(record, pollPatch(record), secret);

      const stored = await raw.get(before.keys.task(record.handle).snapshot);
      assert.ok(stored, 'the snapshot is stored');
      assert.ok(!stored.includes('launch code') && !stored.includes('result'), 'no plaintext at rest');
      assert.match(stored, /^k1\./, 'sealed with the first key, named by its id');

      // Rotation: the new key goes first, the old one stays to open what it sealed.
      const rotated = await newStore({ keyPrefix: prefix, snapshotKeys: [SNAPSHOT_KEY_2, SNAPSHOT_KEY_1] });
      assert.equal((await pollAsOwner(rotated, record, now + 10, limits)).snapshot, secret);
      await rotated.recordPoll(record, pollPatch(record), secret);
      assert.match((await raw.get(rotated.keys.task(record.handle).snapshot))!, /^k2\./);
      const oldKeyOnly = await newStore({ keyPrefix: prefix, snapshotKeys: [SNAPSHOT_KEY_1] });
      assert.equal((await pollAsOwner(oldKeyOnly, record, now + 20, limits)).snapshot, undefined, 'a retired key opens nothing');

      await rotated.deleteTask(record.handle);
      const keys = rotated.keys.task(record.handle);
      assert.equal(await raw.exists(keys.record, keys.poll, keys.snapshot), 0, 'purged for real');
    });

    it('skips the write-back of an unchanged answer without touching what it holds, and re-seals after a key rotation', async () => {
      const prefix = stores.nextPrefix();
      const store = await newStore({ keyPrefix: prefix, snapshotKeys: [SNAPSHOT_KEY_1] });
      const record = taskRecord({ pollIntervalMs: 1000 });
      await store.createTask(record, 10);
      const limits = { toleranceMs: 0, abuseFactor: 50 };
      const now = Date.now();
      const unchanged = { status: record.status, lastUpdatedAtIso: record.lastUpdatedAtIso, ttlMs: record.ttlMs, expiresAt: record.expiresAt, pollIntervalMs: record.pollIntervalMs };
      const answer = '{"status":"working"}';
      await pollAsOwner(store, record, now, limits);
      await store.recordPoll(record, unchanged, answer);
      const key = store.keys.task(record.handle).snapshot;
      const sealed = await raw.get(key);
      const tag = (await pollAsOwner(store, record, now + 1000, limits)).snapshotTag;
      assert.ok(tag && !sealed!.includes(tag), 'the tag is not part of the sealed text');
      await store.recordPoll(record, unchanged, answer, tag);
      assert.equal(await raw.get(key), sealed, 'not sealed and written again (a new seal has a new IV)');

      // Tags are keyed by the sealing key: after a rotation the same answer is sealed anew.
      const rotated = await newStore({ keyPrefix: prefix, snapshotKeys: [SNAPSHOT_KEY_2, SNAPSHOT_KEY_1] });
      const rotatedTag = (await pollAsOwner(rotated, record, now + 2000, limits)).snapshotTag;
      await rotated.recordPoll(record, unchanged, answer, rotatedTag);
      assert.match((await raw.get(key))!, /^k2\./);
    });

    it('gives every key it writes a TTL, task keys until expiresAt plus a margin', async () => {
      const store = await newStore();
      const record = taskRecord({ ttlMs: 30_000, expiresAt: Date.now() + 30_000 });
      await store.createTask(record, 10);
      await store.updateTask(record.handle, { status: 'input_required', expiresAt: record.expiresAt + 5000, ttlMs: 35_000 });
      await pollAsOwner(store, record, Date.now(), { toleranceMs: 0, abuseFactor: 5 });
      await store.recordPoll(record, pollPatch(record, { status: 'input_required', expiresAt: record.expiresAt + 5000, ttlMs: 35_000 }), '{}');
      await store.setSessionInstance('tools', 's1', 'http://a', 60_000);
      await store.putServerRequest('tg-1', { upstream: 'tools', instance: 'http://a', upstreamId: 1 }, 60_000);
      await store.countInWindow('create:a', 60_000, Date.now());
      const expired = taskRecord({ expiresAt: Date.now() - 1 });
      await store.createTask(expired, 10);
      await store.takeExpiredTasks(Date.now(), 10);

      const keys = await raw.keys(`${store.keys.prefix}*`);
      assert.ok(keys.length >= 10, `expected the keys of every kind, got ${keys.join(', ')}`);
      for (const key of keys) {
        const ms = await raw.pttl(key);
        assert.ok(ms > 0, `${key} has no TTL (${ms})`);
      }
      const recordTtl = await raw.pttl(store.keys.task(record.handle).record);
      const untilExpiry = record.expiresAt + 5000 - Date.now();
      assert.ok(recordTtl > untilExpiry && recordTtl <= untilExpiry + 61_000, `record TTL ${recordTtl}ms follows the extended expiresAt`);
    });

    it('decides polls in Lua exactly as decidePoll does', async () => {
      const store = await newStore();
      // Alive for every poll of the sequence (about 300 × 350 ms on the poll clock).
      const record = taskRecord({ ttlMs: 3_600_000, expiresAt: Date.now() + 3_600_000 });
      await store.createTask(record, 10);
      let state: PollState | undefined;
      let now = Date.now();
      let intervalMs = record.pollIntervalMs;
      const random = seeded(7);
      for (let i = 0; i < 300; i++) {
        const rules: PollRules = { intervalMs: 500 + Math.floor(random() * 3) * 500, toleranceMs: Math.floor(random() * 3) * 50, abuseFactor: 1 + Math.floor(random() * 4) };
        now += Math.floor(random() * 700);
        // The interval is the record's own: changed the way a forwarded poll changes it.
        if (rules.intervalMs !== intervalMs) await store.updateTask(record.handle, { pollIntervalMs: rules.intervalMs });
        intervalMs = rules.intervalMs;
        const expected = decidePoll(state, now, rules);
        const actual = await pollAsOwner(store, record, now, rules);
        assert.deepEqual({ verdict: actual.verdict, next: actual.next, retryAfterMs: actual.retryAfterMs }, expected, `poll ${i}`);
        state = expected.next;
      }
    });

    it('lets two replicas agree: one owner limit and one poll clock between them', async () => {
      const prefix = stores.nextPrefix();
      const [a, b] = [await newStore({ keyPrefix: prefix }), await newStore({ keyPrefix: prefix })];
      const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).createTask(taskRecord({ owner: 'racer' }), 5)));
      assert.equal(outcomes.filter((o) => o === 'created').length, 5);
      const created = await b.listTasks({ ...OWNER_A, owner: 'racer' }, undefined, 100);
      assert.equal(created.length, 5, 'every created task is listed on the other replica');

      const task = created[0]!;
      const now = Date.now();
      const limits = { toleranceMs: 0, abuseFactor: 100 };
      const verdicts = await Promise.all(Array.from({ length: 10 }, (_, i) => pollAsOwner(i % 2 ? a : b, task, now, limits)));
      assert.equal(verdicts.filter((d) => d.verdict === 'forward').length, 1);
    });

    it('polls right whether the replica holds a record\'s fixed part or not (store.pollCacheTasks 0, 2)', async () => {
      const limits = { toleranceMs: 0, abuseFactor: 100 };
      for (const pollCacheTasks of [0, 2]) {
        const prefix = stores.nextPrefix();
        const [a, b] = [await newStore({ keyPrefix: prefix, pollCacheTasks }), await newStore({ keyPrefix: prefix })];
        const records = [0, 1, 2].map((i) => taskRecord({ statusMessage: `task ${i}`, pollIntervalMs: 0 }));
        for (const record of records) await a.createTask(record, 10);
        // Polled in turn, three tasks through a cache of two (or none) miss every time, and
        // each poll still sees what another replica wrote just before it.
        for (let round = 0; round < 3; round++) {
          for (const record of records) {
            await b.updateTask(record.handle, { statusMessage: `round ${round}`, lastUpdatedAtIso: new Date(Date.now() + round).toISOString() });
            const opened = await a.openPoll(record.handle, scopeOf(record), Date.now(), limits);
            assert.deepEqual(opened.outcome === 'polled' && opened.record, await b.getTask(record.handle), `cache ${pollCacheTasks}, round ${round}`);
          }
        }
      }
    });

    it('reads what can change from Redis on every poll, with the fixed part of the record held by the replica', async () => {
      const prefix = stores.nextPrefix();
      const [a, b] = [await newStore({ keyPrefix: prefix }), await newStore({ keyPrefix: prefix })];
      const record = taskRecord({ statusMessage: 'starting', pollIntervalMs: 0 });
      await a.createTask(record, 10);
      const limits = { toleranceMs: 0, abuseFactor: 100 };
      const now = Date.now();
      const openOn = async (store: RedisStore, scope = scopeOf(record), at = now) => store.openPoll(record.handle, scope, at, limits);
      const first = await openOn(a);
      assert.deepEqual(first.outcome === 'polled' && first.record, record);
      // Another replica changes every field a poll may change, and removes the message.
      await b.updateTask(record.handle, { status: 'input_required', statusMessage: undefined, lastUpdatedAtIso: '2026-01-02T03:04:05.000Z', ttlMs: record.ttlMs + 1000, expiresAt: record.expiresAt + 1000, pollIntervalMs: 5 });
      const second = await openOn(a);
      assert.deepEqual(second.outcome === 'polled' && second.record, await b.getTask(record.handle), 'the poll sees the other replica\'s update');
      // The scope is checked in Redis, not against what the replica holds.
      assert.deepEqual(await openOn(a, { ...scopeOf(record), owner: 'owner-b' }), { outcome: 'denied' });
      assert.deepEqual(await openOn(a, { ...scopeOf(record), era: 'modern' }), { outcome: 'denied' });
      // Gone through another replica: not found, then a record written again under the same
      // handle (never done by the gateway; a handle is random) is read whole, not patched
      // onto what the replica held.
      await b.deleteTask(record.handle);
      assert.deepEqual(await openOn(a), { outcome: 'not_found' });
      const other = taskRecord({ handle: record.handle, createdAt: record.createdAt + 1, tool: 'other_tool', upstreamTaskId: 'up-other' });
      await b.createTask(other, 10);
      await openOn(a);
      await b.deleteTask(record.handle);
      const third = taskRecord({ handle: record.handle, createdAt: record.createdAt + 2, tool: 'third_tool', upstreamTaskId: 'up-third' });
      await b.createTask(third, 10);
      const reopened = await openOn(a, scopeOf(third), now + 10);
      assert.deepEqual(reopened.outcome === 'polled' && reopened.record, third);
    });

    it('repairs an owner list entry whose record is gone instead of serving it', async () => {
      const store = await newStore();
      const kept = taskRecord();
      const lost = taskRecord({ createdAt: kept.createdAt + 1 });
      await store.createTask(kept, 10);
      await store.createTask(lost, 10);
      await raw.del(store.keys.task(lost.handle).record);
      assert.deepEqual((await store.listTasks(scopeOf(kept), undefined, 10)).map((r) => r.handle), [kept.handle]);
      assert.equal(await raw.zcard(store.keys.owner(kept.owner).tasks), 1);
    });

    it('is what createStore builds for store.type redis, and memory stays the default', async () => {
      const policy = `publicUrl: https://mcp.example.com
auth: { mode: none }
upstreams: { tools: { instances: ["http://127.0.0.1:3000"] } }
routes: [{ path: /mcp, upstream: tools }]
`;
      const logger = pino({ level: 'silent' });
      const memory = createStore(parseConfig(policy, { env: {} }), logger);
      assert.ok(memory instanceof MemoryStore);
      await memory.close();
      const store = `store:
  type: redis
  url: ${URL}
  keyPrefix: "${stores.nextPrefix()}"
  snapshotKeys: [{ id: k1, key: "\${SNAPSHOT_KEY}" }]
`;
      const redis = createStore(parseConfig(`${policy}${store}`, { env: { SNAPSHOT_KEY: SNAPSHOT_KEY_1.key } }), logger);
      try {
        assert.ok(redis instanceof RedisStore);
        await redis.whenReady();
        assert.equal(await redis.isReady(), true);
      } finally {
        await redis.close();
      }
    });
  });
}

/** A small deterministic generator, so a failing sequence can be replayed. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}
