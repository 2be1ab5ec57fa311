/**
 * Provided tasks on the shared standalone Redis at 127.0.0.1:6379, beyond the contract (which
 * redis-store.test.ts runs): what only a shared store has to show. The state is sealed at rest
 * and survives a key rotation, lives exactly as long as the record, and announcements made on
 * one replica reach listeners on another.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { RedisStore } from '../../../src/store/redis-store.js';
import { answersPing, reportMissingRedis, SHARED_REDIS, SharedRedisStores, SNAPSHOT_KEY_1, SNAPSHOT_KEY_2, START_SHARED_REDIS } from '../../support/redis-servers.js';
import { waitFor } from '../../support/wait.js';
import { pollAsOwner } from './store-contract.js';
import { providedRecord, providedState } from '../../support/task-records.js';

const URL = `redis://${SHARED_REDIS.host}:${SHARED_REDIS.port}`;

if (!(await answersPing(SHARED_REDIS.port, SHARED_REDIS.host))) {
  reportMissingRedis(`Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port}`, START_SHARED_REDIS);
} else {
  const stores = new SharedRedisStores();
  const raw = new Redis(URL, { lazyConnect: true });

  const newStore = (overrides: Record<string, unknown> = {}, warnings?: string[]): Promise<RedisStore> => {
    const logger = warnings ? pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (warnings.push(String(chunk)), done()) })) : undefined;
    return stores.open(overrides, { logger });
  };

  after(async () => {
    await stores.close();
    await raw.quit();
  });

  describe('Provided tasks on Redis', () => {
    it('keeps the state sealed at rest, bound to its task, and opens it after a key rotation', async () => {
      const prefix = stores.nextPrefix();
      const before = await newStore({ keyPrefix: prefix, snapshotKeys: [SNAPSHOT_KEY_1] });
      const record = providedRecord({ pollIntervalMs: 10_000 });
      const state = providedState({ requestState: 'the launch code is 0000', outcome: { result: { content: [{ type: 'text', text: 'secret result' }] } } });
      await before.createProvidedTask(record, state, 10);
      const key = before.keys.task(record.handle).provided;
      const stored = await raw.get(key);
      assert.ok(stored, 'the state is stored');
      assert.ok(!stored.includes('launch code') && !stored.includes('secret') && !stored.includes('slow_scan'), 'no plaintext at rest');
      assert.match(stored, /^k1\./, 'sealed with the first key, named by its id');

      // Rotation: the new key seals from then on, the old one still opens what it sealed.
      const warnings: string[] = [];
      const rotated = await newStore({ keyPrefix: prefix, snapshotKeys: [SNAPSHOT_KEY_2, SNAPSHOT_KEY_1] });
      assert.deepEqual((await rotated.readProvidedTask(record.handle))?.state, state);
      assert.equal(await rotated.writeProvidedTask(record.handle, 1, {}, state), true);
      assert.match((await raw.get(key))!, /^k2\./);
      const oldKeyOnly = await newStore({ keyPrefix: prefix, snapshotKeys: [SNAPSHOT_KEY_1] }, warnings);
      assert.equal(await oldKeyOnly.readProvidedTask(record.handle), undefined, 'a retired key opens nothing');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /could not be decrypted/);

      // A poll snapshot of the same task, sealed with the same key, does not open as its state.
      const now = Date.now();
      await pollAsOwner(rotated, record, now, { toleranceMs: 0, abuseFactor: 5 });
      await rotated.recordPoll(record, {}, JSON.stringify(state));
      const snapshot = await raw.get(rotated.keys.task(record.handle).snapshot);
      await raw.set(key, snapshot!, 'KEEPTTL');
      assert.equal(await rotated.readProvidedTask(record.handle), undefined);
    });

    it('gives the state and the lease the record\'s lifetime, moves them with it, and deletes them with it', async () => {
      const store = await newStore();
      const record = providedRecord({ ttlMs: 30_000, expiresAt: Date.now() + 30_000 });
      await store.createProvidedTask(record, providedState(), 10);
      assert.equal(await store.holdLease(record.handle, 'replica-a', Date.now() + 10_000), true);
      const keys = store.keys.task(record.handle);
      const lifetimes = async () => Promise.all([keys.record, keys.provided, keys.lease].map((key) => raw.pttl(key)));
      const assertSameLife = async (what: string) => {
        const [recordTtl, stateTtl, leaseTtl] = await lifetimes();
        // Written in one script, or by later ones that copy the record's PTTL: equal but for
        // the milliseconds between those scripts.
        assert.ok(Math.abs(stateTtl! - recordTtl!) < 1000 && Math.abs(leaseTtl! - recordTtl!) < 1000, `${what}: ${recordTtl}, ${stateTtl}, ${leaseTtl}`);
        return recordTtl!;
      };
      const first = await assertSameLife('created');
      assert.equal(await store.writeProvidedTask(record.handle, 1, { ttlMs: 90_000, expiresAt: record.expiresAt + 60_000 }, providedState()), true);
      const extended = await assertSameLife('extended');
      assert.ok(extended > first + 50_000, `the lifetime moved: ${first} → ${extended}`);

      assert.equal(await raw.hget(keys.record, 'rev'), '2', 'the revision is a field of the record');
      await store.deleteTask(record.handle);
      assert.equal(await raw.exists(keys.record, keys.poll, keys.snapshot, keys.provided, keys.lease), 0, 'purged for real');
    });

    it('announces a change made on one replica to listeners on another, and only for that task', async () => {
      const prefix = stores.nextPrefix();
      const [writer, reader] = [await newStore({ keyPrefix: prefix }), await newStore({ keyPrefix: prefix })];
      const record = providedRecord();
      await writer.createProvidedTask(record, providedState(), 10);
      const other = providedRecord();
      const heard: string[] = [];
      reader.events.subscribe(record.handle, () => heard.push(record.handle));
      reader.events.subscribe(other.handle, () => heard.push(other.handle));
      // Subscribing opens the reader's subscriber connection; once the channel is subscribed,
      // each listener is called once (anything announced before may have been missed).
      await waitFor(async () => heard.length === 2, 'the subscription', 5000);
      assert.deepEqual([...heard].sort(), [record.handle, other.handle].sort());

      heard.length = 0;
      assert.equal(await writer.writeProvidedTask(record.handle, 1, { status: 'input_required' }, providedState({ round: 1 })), true);
      await writer.events.publish(record.handle);
      await waitFor(async () => heard.length > 0, 'the announcement', 5000);
      assert.deepEqual(heard, [record.handle]);
      assert.equal((await reader.readProvidedTask(record.handle))?.record.status, 'input_required', 'the listener reads what was announced');
    });
  });
}
