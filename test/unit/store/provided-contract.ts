/**
 * The behaviour every store must have for tasks the gateway runs itself (ProvidedStore and
 * TaskEvents, src/store/provided-store.ts). Each implementation's test file calls
 * defineProvidedContract with a factory, as it calls defineStoreContract.
 */
import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import { LAPSED_LEASE_CLAIM_MS } from '../../../src/store/provided-store.js';
import type { Store } from '../../../src/store/store.js';
import { pollAsOwner, pollPatch, type StoreFactory } from './store-contract.js';
import { waitFor as until } from '../../support/wait.js';
import { scopeOf, taskRecord, providedRecord, providedState } from '../../support/task-records.js';

export function defineProvidedContract(name: string, factory: StoreFactory): void {
  describe(`Provided store contract: ${name}`, () => {
    let store: Store | undefined;
    beforeEach(async () => {
      await store?.close();
      store = await factory.create();
    });
    after(() => store?.close());

    it('creates a provided task at revision 1, under the owner limit backend tasks count against too', async () => {
      const first = providedRecord();
      const state = providedState();
      assert.equal(await store!.createProvidedTask(first, state, 2), 'created');
      assert.deepEqual(await store!.readProvidedTask(first.handle), { record: first, state, rev: 1 });
      assert.deepEqual(await store!.getTask(first.handle), first, 'a provided task is a task like any other');
      assert.equal(await store!.createTask(taskRecord(), 2), 'created');
      assert.equal(await store!.createProvidedTask(providedRecord(), state, 2), 'owner-limit');
      assert.equal(await store!.createProvidedTask(providedRecord({ owner: 'owner-b' }), state, 2), 'created', 'limits are per owner');
    });

    it('reads nothing for a task that is unknown, expired, or run by its backend', async () => {
      assert.equal(await store!.readProvidedTask(providedRecord().handle), undefined);
      const expired = providedRecord({ expiresAt: Date.now() - 1 });
      assert.equal(await store!.createProvidedTask(expired, providedState(), 10), 'created');
      assert.equal(await store!.readProvidedTask(expired.handle), undefined);
      const backend = taskRecord();
      await store!.createTask(backend, 10);
      assert.equal(await store!.readProvidedTask(backend.handle), undefined);
      assert.equal(await store!.writeProvidedTask(backend.handle, 1, { status: 'completed' }, providedState()), false, 'nor writes one');
      assert.equal((await store!.getTask(backend.handle))?.status, 'working');
    });

    it('writes at the revision read, moving it on, and never a task that is gone or expired', async () => {
      const record = providedRecord();
      await store!.createProvidedTask(record, providedState(), 10);
      const half = providedState({ round: 1, inputRequests: { 'r1-name': { method: 'elicitation/create' } }, requestState: 'opaque' });
      const patch = { status: 'input_required' as const, statusMessage: 'name?', lastUpdatedAtIso: '2026-01-02T03:04:05.000Z' };
      assert.equal(await store!.writeProvidedTask(record.handle, 1, patch, half), true);
      assert.deepEqual(await store!.readProvidedTask(record.handle), { record: { ...record, ...patch }, state: half, rev: 2 });

      assert.equal(await store!.writeProvidedTask(record.handle, 1, { status: 'cancelled' }, providedState()), false, 'a stale revision');
      assert.deepEqual(await store!.readProvidedTask(record.handle), { record: { ...record, ...patch }, state: half, rev: 2 }, 'left as it was');

      const done = providedState({ round: 1, outcome: { result: { content: [{ type: 'text', text: 'done' }] } } });
      assert.equal(await store!.writeProvidedTask(record.handle, 2, { status: 'completed', statusMessage: undefined }, done), true);
      const read = await store!.readProvidedTask(record.handle);
      assert.equal(read?.rev, 3);
      assert.equal(read?.record.statusMessage, undefined, 'a patch to undefined removes the message');
      assert.deepEqual(read?.state, done);

      assert.equal(await store!.writeProvidedTask(providedRecord().handle, 1, {}, done), false, 'unknown');
      await store!.deleteTask(record.handle);
      assert.equal(await store!.writeProvidedTask(record.handle, 3, {}, done), false, 'deleted');
      const expired = providedRecord({ expiresAt: Date.now() - 1 });
      await store!.createProvidedTask(expired, providedState(), 10);
      assert.equal(await store!.writeProvidedTask(expired.handle, 1, {}, done), false, 'expired');
    });

    it('never changes a task that ended: no write, at its revision or any, and no progress', async () => {
      for (const status of ['completed', 'failed', 'cancelled'] as const) {
        const record = providedRecord();
        await store!.createProvidedTask(record, providedState(), 10);
        const end = { status, statusMessage: `ended ${status}`, lastUpdatedAtIso: '2026-01-02T03:04:05.000Z' };
        const ended = providedState({ outcome: { result: { content: [] } } });
        assert.equal(await store!.writeProvidedTask(record.handle, 1, end, ended), true);
        const atEnd = await store!.readProvidedTask(record.handle);
        assert.equal(await store!.writeProvidedTask(record.handle, 2, { status: 'working', statusMessage: 'again' }, providedState()), false, `${status}: a write at the current revision`);
        assert.equal(await store!.writeProvidedTask(record.handle, 2, {}, providedState({ round: 7 })), false, `${status}: a write of the state alone`);
        assert.equal(await store!.writeProvidedProgress(record.handle, 'step 14', '2026-01-02T03:04:09.000Z'), false, `${status}: progress`);
        assert.deepEqual(await store!.readProvidedTask(record.handle), atEnd, `${status}: the task is as it ended`);
        assert.deepEqual(await store!.getTask(record.handle), { ...record, ...end });
      }
    });

    it('writes progress on a running task (statusMessage and lastUpdatedAt only, at the same revision), and on nothing else', async () => {
      const record = providedRecord();
      const state = providedState();
      await store!.createProvidedTask(record, state, 10);
      assert.equal(await store!.writeProvidedProgress(record.handle, 'step 3 of 9', '2026-01-02T03:04:05.000Z'), true);
      const read = await store!.readProvidedTask(record.handle);
      assert.deepEqual(read, { record: { ...record, statusMessage: 'step 3 of 9', lastUpdatedAtIso: '2026-01-02T03:04:05.000Z' }, state, rev: 1 });
      assert.equal(await store!.writeProvidedTask(record.handle, 1, { status: 'input_required' }, state), true, 'progress does not move the revision');
      assert.equal(await store!.writeProvidedProgress(record.handle, 'step 4 of 9', '2026-01-02T03:04:06.000Z'), true, 'nor is it refused while input is asked');

      assert.equal(await store!.writeProvidedProgress(providedRecord().handle, 'step 1', '2026-01-02T03:04:05.000Z'), false, 'unknown');
      const expired = providedRecord({ expiresAt: Date.now() - 1 });
      await store!.createProvidedTask(expired, providedState(), 10);
      assert.equal(await store!.writeProvidedProgress(expired.handle, 'step 1', '2026-01-02T03:04:05.000Z'), false, 'expired');
      const backend = taskRecord();
      await store!.createTask(backend, 10);
      assert.equal(await store!.writeProvidedProgress(backend.handle, 'step 1', '2026-01-02T03:04:05.000Z'), false, 'run by its backend');
      assert.equal((await store!.getTask(backend.handle))?.statusMessage, backend.statusMessage);
    });

    it('lets one of two steps at the same revision through', async () => {
      const record = providedRecord();
      await store!.createProvidedTask(record, providedState(), 10);
      const states = [providedState({ callId: 'answer' }), providedState({ callId: 'cancel' })];
      const written = await Promise.all(states.map((state) => store!.writeProvidedTask(record.handle, 1, {}, state)));
      assert.deepEqual([...written].sort(), [false, true]);
      const read = await store!.readProvidedTask(record.handle);
      assert.equal(read?.rev, 2);
      assert.deepEqual(read?.state, states[written.indexOf(true)]);
    });

    it('drops the poll snapshot when a write changes the status, and keeps it otherwise', async () => {
      const record = providedRecord({ pollIntervalMs: 10_000 });
      await store!.createProvidedTask(record, providedState(), 10);
      const limits = { toleranceMs: 0, abuseFactor: 50 };
      const now = Date.now();
      await pollAsOwner(store!, record, now, limits);
      await store!.recordPoll(record, pollPatch(record), '{"status":"working"}');
      assert.equal(await store!.writeProvidedTask(record.handle, 1, { status: 'working', statusMessage: '40%' }, providedState()), true);
      const early = await pollAsOwner(store!, record, now + 10, limits);
      assert.equal(early.verdict, 'early');
      assert.equal(early.snapshot, '{"status":"working"}', 'the same status: the snapshot still serves');

      assert.equal(await store!.writeProvidedTask(record.handle, 2, { status: 'input_required' }, providedState()), true);
      const next = await pollAsOwner(store!, record, now + 20, limits);
      assert.equal(next.verdict, 'forward', 'the poll state went with the snapshot');
      assert.equal(next.snapshotTag, undefined, 'no snapshot is held');
      assert.equal((await pollAsOwner(store!, record, now + 30, limits)).snapshot, undefined);
      assert.deepEqual(await store!.readPollActivity([record.handle]), [{ forwarded: 2, early: 2, abusive: 0, lastPollAt: now + 30 }], 'the poll activity stays');
    });

    it('frees the owner\'s live slot when a write ends the task, and keeps it listed', async () => {
      const first = providedRecord();
      assert.equal(await store!.createProvidedTask(first, providedState(), 1), 'created');
      const second = providedRecord({ createdAt: first.createdAt + 1 });
      assert.equal(await store!.createProvidedTask(second, providedState(), 1), 'owner-limit');
      assert.equal(await store!.writeProvidedTask(first.handle, 1, { status: 'failed', statusMessage: 'the backend went away' }, providedState()), true);
      assert.equal(await store!.createProvidedTask(second, providedState(), 1), 'created');
      assert.deepEqual((await store!.listTasks(scopeOf(first), undefined, 10)).map((r) => [r.handle, r.status]), [[second.handle, 'working'], [first.handle, 'failed']]);
    });

    it('forgets state and lease with the task, deleted or expired', async () => {
      const now = Date.now();
      const deleted = providedRecord();
      await store!.createProvidedTask(deleted, providedState(), 10);
      assert.equal(await store!.holdLease(deleted.handle, 'replica-a', now + 60_000), true);
      await store!.deleteTask(deleted.handle);
      assert.equal(await store!.readProvidedTask(deleted.handle), undefined);
      assert.equal(await store!.holdLease(deleted.handle, 'replica-b', now + 60_000), false, 'no lease on a task that is gone');

      const expiring = providedRecord({ ttlMs: 1000, expiresAt: now + 1000 });
      await store!.createProvidedTask(expiring, providedState(), 10);
      assert.equal(await store!.holdLease(expiring.handle, 'replica-a', now + 60_000), true);
      assert.deepEqual((await store!.takeExpiredTasks(now + 1000, 10)).map((r) => r.handle), [expiring.handle]);
      assert.equal(await store!.readProvidedTask(expiring.handle), undefined);
      assert.deepEqual(await store!.takeLapsedLeases(now + 120_000, 10), [], 'their leases are not handed out');

      // The same handles again (as a test can, a client cannot): nothing of the old tasks is left.
      for (const record of [deleted, expiring]) {
        const again = { ...record, expiresAt: now + 60_000 };
        const state = providedState({ callId: 'second life' });
        assert.equal(await store!.createProvidedTask(again, state, 10), 'created');
        assert.deepEqual(await store!.readProvidedTask(record.handle), { record: again, state, rev: 1 });
        assert.equal(await store!.holdLease(record.handle, 'replica-b', now + 60_000), true, 'replica-a\'s lease went with the task');
      }
    });

    it('holds a lease for one holder at a time: renewed by it, taken over once it lapsed, released only by it', async () => {
      const record = providedRecord();
      await store!.createProvidedTask(record, providedState(), 10);
      const now = Date.now();
      assert.equal(await store!.holdLease(record.handle, 'replica-a', now + 60_000), true);
      assert.equal(await store!.holdLease(record.handle, 'replica-a', now + 90_000), true, 'renewed');
      assert.equal(await store!.holdLease(record.handle, 'replica-b', now + 60_000), false, 'another holder\'s lease is live');
      await store!.releaseLease(record.handle, 'replica-b');
      assert.equal(await store!.holdLease(record.handle, 'replica-b', now + 60_000), false, 'only the holder releases');
      await store!.releaseLease(record.handle, 'replica-a');
      assert.equal(await store!.holdLease(record.handle, 'replica-b', now + 60_000), true, 'released');

      const lapsing = providedRecord();
      await store!.createProvidedTask(lapsing, providedState(), 10);
      assert.equal(await store!.holdLease(lapsing.handle, 'replica-a', Date.now() - 1), true);
      assert.equal(await store!.holdLease(lapsing.handle, 'replica-b', Date.now() + 60_000), true, 'taken over once lapsed');
      assert.equal(await store!.holdLease(lapsing.handle, 'replica-a', Date.now() + 60_000), false, 'and the old holder is out');
    });

    it('refuses a lease on a task that ended or expired, to its holder too', async () => {
      const record = providedRecord();
      await store!.createProvidedTask(record, providedState(), 10);
      assert.equal(await store!.holdLease(record.handle, 'replica-a', Date.now() + 60_000), true);
      assert.equal(await store!.writeProvidedTask(record.handle, 1, { status: 'cancelled' }, providedState()), true);
      assert.equal(await store!.holdLease(record.handle, 'replica-a', Date.now() + 60_000), false);
      const expired = providedRecord({ expiresAt: Date.now() - 1 });
      await store!.createProvidedTask(expired, providedState(), 10);
      assert.equal(await store!.holdLease(expired.handle, 'replica-a', Date.now() + 60_000), false);
    });

    it('hands a lapsed lease to exactly one of two takers, and out of its old holder\'s reach', async () => {
      const record = providedRecord({ expiresAt: Date.now() + 600_000 });
      await store!.createProvidedTask(record, providedState(), 10);
      assert.equal(await store!.holdLease(record.handle, 'replica-a', Date.now() - 1000), true);
      const now = Date.now();
      const [one, other] = await Promise.all([store!.takeLapsedLeases(now, 10), store!.takeLapsedLeases(now, 10)]);
      assert.deepEqual([...one!, ...other!], [record.handle]);
      assert.equal(await store!.holdLease(record.handle, 'replica-a', Date.now() + 60_000), false, 'the lapsed holder cannot renew: it must stop its call');
      assert.deepEqual(await store!.takeLapsedLeases(now + 1, 10), [], 'taken once');
      // The taker died before it ended the task: after the claim the lease is handed out again.
      const later = now + LAPSED_LEASE_CLAIM_MS + 1;
      assert.deepEqual(await store!.takeLapsedLeases(later, 10), [record.handle]);
      assert.equal(await store!.writeProvidedTask(record.handle, 1, { status: 'failed', statusMessage: 'the replica running the call stopped' }, providedState()), true);
      assert.deepEqual(await store!.takeLapsedLeases(later + LAPSED_LEASE_CLAIM_MS + 1, 10), [], 'ended: dropped');
    });

    it('hands out no lease that was renewed, released, or whose task ended, and at most `limit` per call', async () => {
      const now = Date.now();
      const [renewed, released, ended, lapsed] = Array.from({ length: 4 }, () => providedRecord({ expiresAt: now + 600_000 }));
      for (const record of [renewed!, released!, ended!, lapsed!]) {
        await store!.createProvidedTask(record, providedState(), 10);
        assert.equal(await store!.holdLease(record.handle, 'replica-a', now - 1000), true);
      }
      assert.equal(await store!.holdLease(renewed!.handle, 'replica-a', now + 60_000), true);
      await store!.releaseLease(released!.handle, 'replica-a');
      assert.equal(await store!.writeProvidedTask(ended!.handle, 1, { status: 'completed' }, providedState()), true);
      assert.deepEqual(await store!.takeLapsedLeases(now, 10), [lapsed!.handle]);
      assert.equal(await store!.writeProvidedTask(lapsed!.handle, 1, { status: 'failed' }, providedState()), true);
      // The renewed lease is not lost: it lapses at its new end.
      assert.deepEqual(await store!.takeLapsedLeases(now + 60_001, 10), [renewed!.handle]);

      const many = Array.from({ length: 3 }, () => providedRecord({ expiresAt: now + 600_000 }));
      for (const record of many) {
        await store!.createProvidedTask(record, providedState(), 10);
        await store!.holdLease(record.handle, 'replica-a', now - 1000);
      }
      const first = await store!.takeLapsedLeases(now, 2);
      const second = await store!.takeLapsedLeases(now, 2);
      assert.equal(first.length, 2);
      assert.deepEqual([...first, ...second].sort(), many.map((r) => r.handle).sort());
    });

    it('calls a listener for its task\'s announced changes until it unsubscribes', async () => {
      const [watched, other] = [providedRecord(), providedRecord()];
      let heard = 0;
      let heardOther = 0;
      const stop = store!.events.subscribe(watched.handle, () => heard++);
      await store!.events.publish(watched.handle);
      await until(() => heard > 0);
      const stopOther = store!.events.subscribe(other.handle, () => heardOther++);
      stop();
      const before = heard;
      await store!.events.publish(watched.handle);
      await store!.events.publish(other.handle);
      // Announcements arrive in order: once the second is heard, the first was delivered.
      await until(() => heardOther > 0);
      assert.equal(heard, before, 'not called once unsubscribed');
      stopOther();
    });
  });
}
