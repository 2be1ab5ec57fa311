/**
 * The behaviour every LimitStore must have: the memory store's and the Redis store's pass the
 * same tests (limit-stores.test.ts runs both). Times are passed in, so no test waits on a clock.
 */
import { after, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { LimitClaim, LimitStore } from '../../../src/store/limit-store.js';

export interface LimitStoreFactory {
  /** A store holding nothing; called before every test. */
  create(): Promise<{ limits: LimitStore; close(): Promise<void> }>;
}

function claim(overrides: Partial<LimitClaim> = {}): LimitClaim {
  return { owner: 'alice', rates: [], slots: [], slotId: randomUUID(), slotTtlMs: 60_000, now: 1_000_000, ...overrides };
}

export function defineLimitStoreContract(name: string, factory: LimitStoreFactory): void {
  describe(`LimitStore contract: ${name}`, () => {
    let opened: { limits: LimitStore; close(): Promise<void> } | undefined;
    let limits: LimitStore;
    beforeEach(async () => {
      await opened?.close();
      opened = await factory.create();
      limits = opened.limits;
    });
    after(() => opened?.close());

    it('allows `limit` calls per fixed window, then refuses until the window ends', async () => {
      const rate = { key: 'calls', limit: 3, windowMs: 10_000 };
      const now = 1_000_000; // a window boundary
      for (let i = 0; i < 3; i++) assert.deepEqual(await limits.acquire(claim({ rates: [rate], now: now + i })), { allowed: true });
      assert.deepEqual(await limits.acquire(claim({ rates: [rate], now: now + 4000 })), { allowed: false, kind: 'rate', index: 0, retryAfterMs: 6000 });
      assert.deepEqual(await limits.acquire(claim({ rates: [rate], now: now + 10_000 })), { allowed: true }, 'a new window');
      assert.deepEqual(await limits.acquire(claim({ owner: 'bob', rates: [rate], now: now + 5 })), { allowed: true }, 'counts are per principal');
    });

    it('is all or nothing: a refusal by one rule counts nothing under the others', async () => {
      const wide = { key: 'all', limit: 10, windowMs: 60_000 };
      const narrow = { key: 'tool:x', limit: 1, windowMs: 60_000 };
      assert.equal((await limits.acquire(claim({ rates: [wide, narrow] }))).allowed, true);
      const refused = await limits.acquire(claim({ rates: [wide, narrow] }));
      assert.equal(refused.allowed, false);
      assert.equal(!refused.allowed && refused.index, 1, 'the second rule refused');
      // Nine more under the wide rule alone: had the refused call counted there, the ninth would fail.
      for (let i = 0; i < 9; i++) assert.equal((await limits.acquire(claim({ rates: [wide] }))).allowed, true, `call ${i}`);
      assert.equal((await limits.acquire(claim({ rates: [wide] }))).allowed, false);
    });

    it('holds at most `max` slots, frees one on release, and forgets an unreleased one after its TTL', async () => {
      const slots = [{ key: 'in-flight', max: 2 }];
      const first = claim({ slots });
      const second = claim({ slots });
      assert.equal((await limits.acquire(first)).allowed, true);
      assert.equal((await limits.acquire(second)).allowed, true);
      const refused = await limits.acquire(claim({ slots }));
      assert.deepEqual(refused, { allowed: false, kind: 'concurrency', index: 0, retryAfterMs: 1000 });
      await limits.release('alice', ['in-flight'], first.slotId, first.now);
      assert.equal((await limits.acquire(claim({ slots }))).allowed, true, 'a released slot is free again');
      assert.equal((await limits.acquire(claim({ slots }))).allowed, false);
      // A caller that never released (a crashed replica): its slots lapse after slotTtlMs.
      assert.equal((await limits.acquire(claim({ slots, now: first.now + 60_001 }))).allowed, true);
    });

    it('a concurrency refusal leaves the rate windows alone', async () => {
      const rates = [{ key: 'calls', limit: 2, windowMs: 60_000 }];
      const slots = [{ key: 'in-flight', max: 1 }];
      assert.equal((await limits.acquire(claim({ rates, slots }))).allowed, true);
      assert.equal((await limits.acquire(claim({ rates, slots }))).allowed, false);
      assert.equal((await limits.acquire(claim({ rates }))).allowed, true, 'the refused call was not counted');
    });

    it('suspends a principal from the refusal that reaches the threshold to the end of its window', async () => {
      const now = 2_000_000;
      assert.equal(await limits.suspendedFor('mallory', now), 0);
      assert.deepEqual(await limits.countRefusal('mallory', 3, 60_000, now), { count: 1, resetAt: now + 60_000 });
      assert.equal((await limits.countRefusal('mallory', 3, 60_000, now)).count, 2);
      assert.equal(await limits.suspendedFor('mallory', now), 0, 'below the threshold');
      const third = await limits.countRefusal('mallory', 3, 60_000, now);
      assert.equal(third.count, 3);
      const left = await limits.suspendedFor('mallory', now);
      assert.ok(left > 0 && left <= 60_000, `suspended for the rest of the window (${left} ms)`);
      assert.equal(await limits.suspendedFor('alice', now), 0, 'other principals are not');
    });

    it('suspends a principal for as long as an operator says, and ends a suspension on request', async () => {
      const now = 3_000_000;
      await limits.suspend('carol', now + 30_000, now);
      const left = await limits.suspendedFor('carol', now);
      assert.ok(left > 29_000 && left <= 30_000, `suspended for what was asked (${left} ms)`);
      assert.equal(await limits.suspendedFor('dave', now), 0, 'other principals are not');
      assert.equal(await limits.unsuspend('carol', now), true);
      assert.equal(await limits.suspendedFor('carol', now), 0);
      assert.equal(await limits.unsuspend('carol', now), false, 'nothing left to end');
    });

    it('replaces a detector suspension with an operator one, and ends either', async () => {
      const now = 4_000_000;
      for (let i = 0; i < 2; i++) await limits.countRefusal('erin', 2, 60_000, now);
      assert.ok((await limits.suspendedFor('erin', now)) > 0);
      await limits.suspend('erin', now + 5000, now);
      const left = await limits.suspendedFor('erin', now);
      assert.ok(left > 4000 && left <= 5000, `the operator's shorter suspension replaced the detector's (${left} ms)`);
      assert.equal(await limits.unsuspend('erin', now), true);
      assert.equal(await limits.suspendedFor('erin', now), 0);
    });
  });
}
