/**
 * The poll half of the Store contract (called by defineStoreContract inside its describe):
 * the atomic poll decision, snapshots, the write-back of a forwarded poll, and scope checks.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../../src/store/store.js';
import type { TaskPatch, TaskScope } from '../../../src/task-model/task-record.js';
import { pollAsOwner, pollPatch } from './store-contract.js';
import { scopeOf, taskRecord } from '../../support/task-records.js';

export function definePollContract(store: () => Store): void {
  it('governs polls atomically: first forwarded, early ones counted, snapshot served', async () => {
    const record = taskRecord({ pollIntervalMs: 10_000 });
    await store().createTask(record, 10);
    const limits = { toleranceMs: 0, abuseFactor: 2 };
    const now = Date.now();
    const first = await store().openPoll(record.handle, scopeOf(record), now, limits);
    assert.equal(first.outcome, 'polled');
    assert.deepEqual(first.outcome === 'polled' && first.record, record, 'the poll yields the record as stored');
    assert.equal(first.outcome === 'polled' && first.decision.verdict, 'forward');
    await store().recordPoll(record, pollPatch(record), '{"status":"working"}');
    const early = await pollAsOwner(store(), record, now + 1000, limits);
    assert.equal(early.verdict, 'early');
    assert.equal(early.retryAfterMs, 9000);
    assert.equal(early.snapshot, '{"status":"working"}');
    assert.equal((await pollAsOwner(store(), record, now + 2000, limits)).verdict, 'early');
    const abusive = await pollAsOwner(store(), record, now + 3000, limits);
    assert.equal(abusive.verdict, 'abusive');
    assert.equal(abusive.next.earlyCount, 3);
    assert.equal(abusive.snapshot, '{"status":"working"}');
    assert.equal((await pollAsOwner(store(), record, now + 10_000, limits)).verdict, 'forward');
  });

  it('reads the poll snapshot with the record, without moving the poll clock', async () => {
    const record = taskRecord({ pollIntervalMs: 10_000 });
    await store().createTask(record, 10);
    assert.deepEqual(await store().readPollSnapshot(record.handle), { record, snapshot: undefined });
    await store().recordPoll(record, pollPatch(record, { status: 'input_required' }), '{"status":"input_required"}');
    const read = await store().readPollSnapshot(record.handle);
    assert.equal(read?.snapshot, '{"status":"input_required"}');
    assert.equal(read?.record.status, 'input_required');
    const limits = { toleranceMs: 0, abuseFactor: 5 };
    assert.equal((await pollAsOwner(store(), record, Date.now(), limits)).verdict, 'forward', 'the read booked no poll');
    assert.equal(await store().readPollSnapshot('unknown-handle-unknown-handle-xx'), undefined);
  });

  it('books a poll accepted within the tolerance at its due time, so the schedule never creeps', async () => {
    const record = taskRecord({ pollIntervalMs: 1000 });
    await store().createTask(record, 10);
    const limits = { toleranceMs: 100, abuseFactor: 50 };
    const now = Date.now();
    assert.equal((await pollAsOwner(store(), record, now, limits)).verdict, 'forward');
    assert.equal((await pollAsOwner(store(), record, now + 950, limits)).verdict, 'forward', 'within the tolerance');
    // Booked at now + 1000, so the next is due at now + 2000 (minus the tolerance), not now + 1850.
    const creeping = await pollAsOwner(store(), record, now + 1880, limits);
    assert.equal(creeping.verdict, 'early');
    assert.equal(creeping.retryAfterMs, 20);
  });

  it('applies a tolerance no longer than the interval less 1 ms, so no burst of polls passes back to back', async () => {
    // The default tolerance (50 ms) against a backend asking for 10 ms, under the default floor of 0 s.
    const record = taskRecord({ pollIntervalMs: 10 });
    await store().createTask(record, 10);
    const limits = { toleranceMs: 50, abuseFactor: 50 };
    const now = Date.now();
    assert.equal((await pollAsOwner(store(), record, now, limits)).verdict, 'forward');
    const second = await pollAsOwner(store(), record, now, limits);
    assert.equal(second.verdict, 'early', 'a tolerance of five intervals let five more through at once');
    assert.equal(second.retryAfterMs, 1);
    assert.equal((await pollAsOwner(store(), record, now + 9, limits)).verdict, 'forward', '1 ms of tolerance is left');
    assert.equal((await pollAsOwner(store(), record, now + 9, limits)).verdict, 'early', 'booked at its due time, now + 10');
  });

  it('decides each poll on the interval the record holds now', async () => {
    const record = taskRecord({ pollIntervalMs: 10_000 });
    await store().createTask(record, 10);
    const limits = { toleranceMs: 0, abuseFactor: 5 };
    const now = Date.now();
    assert.equal((await pollAsOwner(store(), record, now, limits)).verdict, 'forward');
    assert.equal((await pollAsOwner(store(), record, now + 2000, limits)).retryAfterMs, 8000);
    await store().recordPoll(record, pollPatch(record, { pollIntervalMs: 2000 }), '{}');
    assert.equal((await pollAsOwner(store(), record, now + 2000, limits)).verdict, 'forward', 'the new, shorter interval');
  });

  it('forwards the next poll after the poll state is invalidated (the client changed the task)', async () => {
    const record = taskRecord({ pollIntervalMs: 10_000 });
    await store().createTask(record, 10);
    const limits = { toleranceMs: 0, abuseFactor: 5 };
    const now = Date.now();
    await pollAsOwner(store(), record, now, limits);
    await store().recordPoll(record, pollPatch(record, { status: 'input_required' }), '{"status":"input_required"}');
    assert.equal((await pollAsOwner(store(), record, now + 10, limits)).verdict, 'early');
    await store().invalidatePoll(record.handle);
    const next = await pollAsOwner(store(), record, now + 20, limits);
    assert.equal(next.verdict, 'forward');
    assert.equal(next.snapshot, undefined);
  });

  it('denies a poll from outside the task\'s scope (owner, era, upstream) and leaves the owner\'s poll clock alone', async () => {
    const record = taskRecord({ pollIntervalMs: 10_000 });
    await store().createTask(record, 10);
    const limits = { toleranceMs: 0, abuseFactor: 1 };
    const foreign: TaskScope[] = [
      { ...scopeOf(record), owner: 'owner-b' },
      { ...scopeOf(record), era: 'modern' },
      { ...scopeOf(record), upstream: 'other-tools' },
    ];
    const now = Date.now();
    // Before the owner's first poll: denied lookups book nothing, so the owner's first is forwarded.
    for (const [i, scope] of foreign.entries()) {
      assert.deepEqual(await store().openPoll(record.handle, scope, now + i, limits), { outcome: 'denied' }, `scope ${JSON.stringify(scope)}`);
    }
    const first = await pollAsOwner(store(), record, now + 10, limits);
    assert.equal(first.verdict, 'forward');
    assert.equal(first.next.lastForwardedAt, now + 10, 'booked at the owner\'s poll, not at a foreign one');
    await store().recordPoll(record, pollPatch(record), '{"status":"working"}');
    // Within the interval: denied lookups count no early polls (one more would be abuse here).
    for (const [i, scope] of foreign.entries()) {
      assert.deepEqual(await store().openPoll(record.handle, scope, now + 100 + i, limits), { outcome: 'denied' });
    }
    const early = await pollAsOwner(store(), record, now + 1010, limits);
    assert.equal(early.verdict, 'early');
    assert.equal(early.next.earlyCount, 1);
    assert.equal(early.retryAfterMs, 9000);
    assert.equal(early.snapshot, '{"status":"working"}');
    assert.equal((await pollAsOwner(store(), record, now + 10_010, limits)).verdict, 'forward', 'the owner\'s schedule is intact');
  });

  it('answers not_found for an unknown or expired task, and keeps no poll state for it', async () => {
    const limits = { toleranceMs: 0, abuseFactor: 5 };
    const now = Date.now();
    const unknown = taskRecord({ pollIntervalMs: 10_000 });
    assert.deepEqual(await store().openPoll(unknown.handle, scopeOf(unknown), now, limits), { outcome: 'not_found' });
    const expiring = taskRecord({ pollIntervalMs: 10_000 });
    await store().createTask(expiring, 10);
    assert.deepEqual(await store().openPoll(expiring.handle, scopeOf(expiring), expiring.expiresAt, limits), { outcome: 'not_found' }, 'expired at expiresAt');
    assert.deepEqual(await store().openPoll(expiring.handle, { ...scopeOf(expiring), owner: 'owner-b' }, expiring.expiresAt + 1, limits), { outcome: 'not_found' }, 'expired comes before foreign');
    // Neither lookup booked a poll: the owner's next poll (while the task lives) is forwarded.
    assert.equal((await pollAsOwner(store(), expiring, expiring.expiresAt - 10, limits)).verdict, 'forward');
    // The unknown handle, created since (as a test can, a client cannot), starts with a fresh clock.
    await store().createTask(unknown, 10);
    assert.equal((await pollAsOwner(store(), unknown, now + 1, limits)).verdict, 'forward');
    assert.deepEqual(await store().openPoll('not-a-stored-handle-0000000000000', scopeOf(unknown), now, limits), { outcome: 'not_found' });
  });

  it('records a poll: the record and the snapshot in one step', async () => {
    const record = taskRecord({ pollIntervalMs: 10_000 });
    await store().createTask(record, 10);
    const limits = { toleranceMs: 0, abuseFactor: 5 };
    const now = Date.now();
    await pollAsOwner(store(), record, now, limits);
    await store().recordPoll(record, pollPatch(record, { status: 'input_required', statusMessage: 'name?', lastUpdatedAtIso: '2026-01-02T03:04:05.000Z' }), '{"status":"input_required"}');
    const stored = await store().getTask(record.handle);
    assert.deepEqual(stored, { ...record, status: 'input_required', statusMessage: 'name?', lastUpdatedAtIso: '2026-01-02T03:04:05.000Z' });
    const early = await pollAsOwner(store(), record, now + 10, limits);
    assert.equal(early.snapshot, '{"status":"input_required"}');
    await store().recordPoll(stored!, pollPatch(stored!, { status: 'working', statusMessage: undefined }), '{"status":"working"}');
    assert.equal((await store().getTask(record.handle))?.statusMessage, undefined, 'a patch to undefined removes the message');
    assert.equal((await pollAsOwner(store(), record, now + 20, limits)).snapshot, '{"status":"working"}', 'the newer snapshot replaces the older');
  });

  it('writes a forwarded poll back only when its answer or the record changed', async () => {
    const record = taskRecord({ pollIntervalMs: 1000 });
    await store().createTask(record, 10);
    const limits = { toleranceMs: 0, abuseFactor: 50 };
    const now = Date.now();
    const unchanged: TaskPatch = { status: record.status, lastUpdatedAtIso: record.lastUpdatedAtIso, ttlMs: record.ttlMs, expiresAt: record.expiresAt, pollIntervalMs: record.pollIntervalMs };
    const first = await pollAsOwner(store(), record, now, limits);
    assert.equal(first.snapshotTag, undefined, 'no snapshot is held yet');
    await store().recordPoll(record, unchanged, '{"status":"working"}', first.snapshotTag);
    assert.equal((await pollAsOwner(store(), record, now + 10, limits)).snapshot, '{"status":"working"}', 'the first answer is written');

    const second = await pollAsOwner(store(), record, now + 1000, limits);
    assert.equal(second.verdict, 'forward');
    assert.equal(typeof second.snapshotTag, 'string', 'a forwarded poll learns the tag of the snapshot held');
    await store().recordPoll(record, unchanged, '{"status":"working"}', second.snapshotTag);
    assert.equal((await pollAsOwner(store(), record, now + 1010, limits)).snapshot, '{"status":"working"}', 'the same answer still serves');

    // The same answer on a record the patch changes: the record is written.
    const third = await pollAsOwner(store(), record, now + 2000, limits);
    await store().recordPoll(record, { ...unchanged, status: 'input_required' }, '{"status":"working"}', third.snapshotTag);
    const changed = await store().getTask(record.handle);
    assert.equal(changed?.status, 'input_required');

    // A new answer on an unchanged record: the snapshot is written.
    const fourth = await pollAsOwner(store(), record, now + 3000, limits);
    await store().recordPoll(changed!, { ...unchanged, status: 'input_required' }, '{"status":"input_required"}', fourth.snapshotTag);
    assert.equal((await pollAsOwner(store(), record, now + 3010, limits)).snapshot, '{"status":"input_required"}');

    // A snapshot invalidated (the client changed the task) leaves no tag to match.
    await store().invalidatePoll(record.handle);
    const fifth = await pollAsOwner(store(), record, now + 3020, limits);
    assert.equal(fifth.verdict, 'forward');
    assert.equal(fifth.snapshotTag, undefined);
  });

  it('frees the owner\'s slot when a recorded poll ends the task, and keeps it listed', async () => {
    const first = taskRecord();
    const second = taskRecord({ createdAt: first.createdAt + 1 });
    assert.equal(await store().createTask(first, 2), 'created');
    assert.equal(await store().createTask(second, 2), 'created');
    assert.equal(await store().createTask(taskRecord(), 2), 'owner-limit');
    await pollAsOwner(store(), first, Date.now(), { toleranceMs: 0, abuseFactor: 5 });
    await store().recordPoll(first, pollPatch(first, { status: 'completed' }), '{"status":"completed"}');
    assert.equal((await store().getTask(first.handle))?.status, 'completed');
    assert.deepEqual((await store().listTasks(scopeOf(first), undefined, 10)).map((r) => [r.handle, r.status]), [[second.handle, 'working'], [first.handle, 'completed']]);
    assert.equal(await store().createTask(taskRecord({ createdAt: first.createdAt + 2 }), 2), 'created');
    assert.equal(await store().createTask(taskRecord(), 2), 'owner-limit');
  });

  it('keeps a task whose lifetime a recorded poll extended from the sweeper until its new end', async () => {
    const now = Date.now();
    const record = taskRecord({ ttlMs: 1000, expiresAt: now + 1000 });
    await store().createTask(record, 10);
    await store().recordPoll(record, pollPatch(record, { ttlMs: 5000, expiresAt: now + 5000 }), '{}');
    assert.deepEqual(await store().takeExpiredTasks(now + 2000, 10), []);
    assert.ok(await store().getTask(record.handle));
    const taken = await store().takeExpiredTasks(now + 5000, 10);
    assert.deepEqual(taken.map((r) => [r.handle, r.expiresAt]), [[record.handle, now + 5000]]);
  });

  it('records nothing for a poll of a task that is gone', async () => {
    const record = taskRecord({ pollIntervalMs: 10_000 });
    await store().recordPoll(record, pollPatch(record, { status: 'completed' }), '{"status":"completed"}');
    assert.equal(await store().getTask(record.handle), undefined);
    // Created afterwards (as a test can, a client cannot): no snapshot was left behind for it.
    await store().createTask(record, 10);
    const now = Date.now();
    await pollAsOwner(store(), record, now, { toleranceMs: 0, abuseFactor: 5 });
    const early = await pollAsOwner(store(), record, now + 10, { toleranceMs: 0, abuseFactor: 5 });
    assert.equal(early.verdict, 'early');
    assert.equal(early.snapshot, undefined);
    assert.equal((await store().getTask(record.handle))?.status, 'working');
  });

  it('books each poll\'s verdict and time with the poll, keeps them past an invalidation, and never for a foreign lookup', async () => {
    const record = taskRecord({ pollIntervalMs: 10_000 });
    const other = taskRecord({ pollIntervalMs: 10_000 });
    await store().createTask(record, 10);
    await store().createTask(other, 10);
    assert.deepEqual(await store().readPollActivity([record.handle]), [{ forwarded: 0, early: 0, abusive: 0 }], 'never polled');
    const limits = { toleranceMs: 0, abuseFactor: 1 };
    const now = Date.now();
    await pollAsOwner(store(), record, now, limits);
    await store().recordPoll(record, pollPatch(record), '{"status":"working"}');
    await pollAsOwner(store(), record, now + 100, limits);
    assert.equal((await pollAsOwner(store(), record, now + 200, limits)).verdict, 'abusive');
    assert.deepEqual(await store().openPoll(record.handle, { ...scopeOf(record), owner: 'owner-b' }, now + 300, limits), { outcome: 'denied' });
    assert.deepEqual(await store().readPollActivity([record.handle]), [{ forwarded: 1, early: 1, abusive: 1, lastPollAt: now + 200 }], 'a foreign lookup books nothing');
    await store().invalidatePoll(record.handle);
    assert.equal((await pollAsOwner(store(), record, now + 400, limits)).verdict, 'forward', 'the clock was reset');
    const unknown = taskRecord();
    assert.deepEqual(await store().readPollActivity([record.handle, unknown.handle, other.handle]), [
      { forwarded: 2, early: 1, abusive: 1, lastPollAt: now + 400 },
      { forwarded: 0, early: 0, abusive: 0 },
      { forwarded: 0, early: 0, abusive: 0 },
    ], 'in order; the counts outlive the invalidation; an unknown task has none');
    assert.deepEqual(await store().readPollActivity([]), []);
    await store().deleteTask(record.handle);
    assert.deepEqual(await store().readPollActivity([record.handle]), [{ forwarded: 0, early: 0, abusive: 0 }], 'gone with the task');
  });
}
