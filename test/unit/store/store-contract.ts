/**
 * The behaviour every Store must have. Each implementation's test file calls
 * defineStoreContract with a factory; the memory and Redis stores pass the same tests.
 */
import { after, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../../src/store/store.js';
import { mintHandle } from '../../../src/tasks/handle.js';
import type { TaskRecord } from '../../../src/tasks/task-record.js';

export interface StoreFactory {
  /** A store holding nothing; called before every test. */
  create(): Promise<Store>;
}

export function taskRecord(overrides: Partial<TaskRecord> = {}): TaskRecord {
  const now = Date.now();
  return {
    handle: mintHandle(),
    owner: 'owner-a',
    upstream: 'tools',
    instance: 'http://127.0.0.1:3000',
    upstreamPath: '/mcp',
    upstreamTaskId: `up-${Math.random().toString(36).slice(2)}`,
    era: 'legacy',
    tool: 'slow_scan',
    upstreamSession: 'session-1',
    protocolVersion: '2025-11-25',
    createdAt: now,
    createdAtIso: new Date(now).toISOString(),
    lastUpdatedAtIso: new Date(now).toISOString(),
    ttlMs: 60_000,
    expiresAt: now + 60_000,
    pollIntervalMs: 1000,
    status: 'working',
    readOnce: false,
    ...overrides,
  };
}

export function defineStoreContract(name: string, factory: StoreFactory): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store | undefined;
    beforeEach(async () => {
      await store?.close();
      store = await factory.create();
    });
    after(() => store?.close());

    it('keeps session stickiness, refreshes it on touch, and forgets it on delete', async () => {
      await store!.setSessionInstance('tools', 's1', 'http://a', 60_000);
      assert.equal(await store!.touchSession('tools', 's1', 60_000), 'http://a');
      assert.equal(await store!.touchSession('other', 's1', 60_000), undefined, 'sessions are per upstream');
      await store!.deleteSession('tools', 's1');
      assert.equal(await store!.touchSession('tools', 's1', 60_000), undefined);
    });

    it('forgets a session after its idle lifetime', async () => {
      await store!.setSessionInstance('tools', 's2', 'http://a', 50);
      await new Promise((r) => setTimeout(r, 80));
      assert.equal(await store!.touchSession('tools', 's2', 50), undefined);
    });

    it('creates a task readable at once, by handle and by backend id', async () => {
      const record = taskRecord();
      assert.equal(await store!.createTask(record, 10), 'created');
      assert.deepEqual(await store!.getTask(record.handle), record);
      assert.equal(await store!.findTaskHandle(record.upstream, record.instance, record.upstreamTaskId), record.handle);
      assert.equal(await store!.findTaskHandle(record.upstream, 'http://other', record.upstreamTaskId), undefined);
    });

    it('refuses a creation past the owner limit, counting only tasks that are not terminal', async () => {
      const first = taskRecord();
      const second = taskRecord();
      assert.equal(await store!.createTask(first, 2), 'created');
      assert.equal(await store!.createTask(second, 2), 'created');
      assert.equal(await store!.createTask(taskRecord(), 2), 'owner-limit');
      assert.equal(await store!.createTask(taskRecord({ owner: 'owner-b' }), 2), 'created', 'limits are per owner');
      await store!.updateTask(first.handle, { status: 'completed' });
      assert.equal(await store!.createTask(taskRecord(), 2), 'created');
    });

    it('updates and deletes a task, and its backend id index with it', async () => {
      const record = taskRecord();
      await store!.createTask(record, 10);
      await store!.updateTask(record.handle, { status: 'input_required', statusMessage: 'name?', pollIntervalMs: 2000 });
      const updated = await store!.getTask(record.handle);
      assert.equal(updated?.status, 'input_required');
      assert.equal(updated?.statusMessage, 'name?');
      assert.equal(updated?.pollIntervalMs, 2000);
      await store!.deleteTask(record.handle);
      assert.equal(await store!.getTask(record.handle), undefined);
      assert.equal(await store!.findTaskHandle(record.upstream, record.instance, record.upstreamTaskId), undefined);
    });

    it('never serves an expired task, and hands expired tasks to the sweeper once', async () => {
      const now = Date.now();
      const expired = taskRecord({ expiresAt: now - 1 });
      const live = taskRecord();
      await store!.createTask(expired, 10);
      await store!.createTask(live, 10);
      assert.equal(await store!.getTask(expired.handle), undefined);
      const taken = await store!.takeExpiredTasks(now, 10);
      assert.deepEqual(taken.map((r) => r.handle), [expired.handle]);
      assert.deepEqual(await store!.takeExpiredTasks(now, 10), []);
      assert.ok(await store!.getTask(live.handle));
    });

    it('lists only the owner\'s tasks, newest first, in pages', async () => {
      const base = Date.now();
      const mine = [0, 1, 2, 3, 4].map((i) => taskRecord({ createdAt: base + i }));
      for (const r of mine) await store!.createTask(r, 100);
      await store!.createTask(taskRecord({ owner: 'owner-b', createdAt: base + 10 }), 100);
      const first = await store!.listTasks('owner-a', undefined, 2);
      assert.deepEqual(first.map((r) => r.handle), [mine[4]!.handle, mine[3]!.handle]);
      const last = first.at(-1)!;
      const second = await store!.listTasks('owner-a', { createdAt: last.createdAt, handle: last.handle }, 10);
      assert.deepEqual(second.map((r) => r.handle), [mine[2]!.handle, mine[1]!.handle, mine[0]!.handle]);
      assert.deepEqual(await store!.listTasks('nobody', undefined, 10), []);
    });

    it('governs polls atomically: first forwarded, early ones counted, snapshot served', async () => {
      const record = taskRecord({ pollIntervalMs: 10_000 });
      await store!.createTask(record, 10);
      const rules = { intervalMs: 10_000, toleranceMs: 0, abuseFactor: 2 };
      const now = Date.now();
      assert.equal((await store!.checkPoll(record.handle, now, rules)).verdict, 'forward');
      await store!.savePollSnapshot(record.handle, '{"status":"working"}');
      const early = await store!.checkPoll(record.handle, now + 1000, rules);
      assert.equal(early.verdict, 'early');
      assert.equal(early.retryAfterMs, 9000);
      assert.equal(early.snapshot, '{"status":"working"}');
      assert.equal((await store!.checkPoll(record.handle, now + 2000, rules)).verdict, 'early');
      assert.equal((await store!.checkPoll(record.handle, now + 3000, rules)).verdict, 'abusive');
      assert.equal((await store!.checkPoll(record.handle, now + 10_000, rules)).verdict, 'forward');
    });

    it('books a poll accepted within the tolerance at its due time, so the schedule never creeps', async () => {
      const record = taskRecord({ pollIntervalMs: 1000 });
      await store!.createTask(record, 10);
      const rules = { intervalMs: 1000, toleranceMs: 100, abuseFactor: 50 };
      const now = Date.now();
      assert.equal((await store!.checkPoll(record.handle, now, rules)).verdict, 'forward');
      assert.equal((await store!.checkPoll(record.handle, now + 950, rules)).verdict, 'forward', 'within the tolerance');
      // Booked at now + 1000, so the next is due at now + 2000 (minus the tolerance), not now + 1850.
      const creeping = await store!.checkPoll(record.handle, now + 1880, rules);
      assert.equal(creeping.verdict, 'early');
      assert.equal(creeping.retryAfterMs, 20);
    });

    it('forwards the next poll after the poll state is invalidated (the client changed the task)', async () => {
      const record = taskRecord({ pollIntervalMs: 10_000 });
      await store!.createTask(record, 10);
      const rules = { intervalMs: 10_000, toleranceMs: 0, abuseFactor: 5 };
      const now = Date.now();
      await store!.checkPoll(record.handle, now, rules);
      await store!.savePollSnapshot(record.handle, '{"status":"input_required"}');
      assert.equal((await store!.checkPoll(record.handle, now + 10, rules)).verdict, 'early');
      await store!.invalidatePoll(record.handle);
      const next = await store!.checkPoll(record.handle, now + 20, rules);
      assert.equal(next.verdict, 'forward');
      assert.equal(next.snapshot, undefined);
    });

    it('counts events in fixed windows, per key', async () => {
      const now = 1_000_000_020_000; // a multiple of the window, so the window starts here
      assert.deepEqual(await store!.countInWindow('create:a', 60_000, now), { count: 1, resetAt: now + 60_000 });
      assert.equal((await store!.countInWindow('create:a', 60_000, now + 10)).count, 2);
      assert.equal((await store!.countInWindow('create:b', 60_000, now + 10)).count, 1);
      assert.equal((await store!.countInWindow('create:a', 60_000, now + 60_000)).count, 1, 'a new window starts at zero');
    });

    it('counts neither expired nor deleted tasks against the owner limit', async () => {
      const expired = taskRecord({ expiresAt: Date.now() - 1 });
      const deleted = taskRecord();
      assert.equal(await store!.createTask(expired, 2), 'created');
      assert.equal(await store!.createTask(deleted, 2), 'created');
      await store!.deleteTask(deleted.handle);
      assert.equal(await store!.createTask(taskRecord(), 2), 'created');
      assert.equal(await store!.createTask(taskRecord(), 2), 'created');
      assert.equal(await store!.createTask(taskRecord(), 2), 'owner-limit');
    });

    it('lets exactly the owner limit through when creations race', async () => {
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => store!.createTask(taskRecord({ owner: 'racer' }), 3)));
      assert.equal(outcomes.filter((o) => o === 'created').length, 3);
      assert.equal(outcomes.filter((o) => o === 'owner-limit').length, 5);
    });

    it('forwards exactly one of concurrent polls', async () => {
      const record = taskRecord();
      await store!.createTask(record, 10);
      const now = Date.now();
      const rules = { intervalMs: 10_000, toleranceMs: 0, abuseFactor: 100 };
      const decisions = await Promise.all(Array.from({ length: 6 }, () => store!.checkPoll(record.handle, now, rules)));
      assert.equal(decisions.filter((d) => d.verdict === 'forward').length, 1);
      assert.deepEqual(decisions.filter((d) => d.verdict === 'early').map((d) => d.next.earlyCount).sort(), [1, 2, 3, 4, 5]);
    });

    it('forgets a deleted task everywhere: list, backend id, poll state', async () => {
      const record = taskRecord();
      await store!.createTask(record, 10);
      const rules = { intervalMs: 10_000, toleranceMs: 0, abuseFactor: 5 };
      const now = Date.now();
      await store!.checkPoll(record.handle, now, rules);
      await store!.deleteTask(record.handle);
      assert.deepEqual(await store!.listTasks(record.owner, undefined, 10), []);
      assert.equal(await store!.findTaskHandle(record.upstream, record.instance, record.upstreamTaskId), undefined);
      // The same record again (as a test can, a client cannot) starts with a fresh poll clock.
      await store!.createTask(record, 10);
      assert.equal((await store!.checkPoll(record.handle, now + 1, rules)).verdict, 'forward');
      await store!.deleteTask('never-created-handle-000000000000');
    });

    it('changes nothing for an update of an unknown task', async () => {
      const handle = taskRecord().handle;
      await store!.updateTask(handle, { status: 'completed' });
      assert.equal(await store!.getTask(handle), undefined);
    });

    it('keeps a task whose lifetime an update extended from the sweeper until its new end', async () => {
      const now = Date.now();
      const record = taskRecord({ ttlMs: 1000, expiresAt: now + 1000 });
      await store!.createTask(record, 10);
      await store!.updateTask(record.handle, { ttlMs: 5000, expiresAt: now + 5000 });
      assert.deepEqual(await store!.takeExpiredTasks(now + 2000, 10), []);
      assert.ok(await store!.getTask(record.handle));
      const taken = await store!.takeExpiredTasks(now + 5000, 10);
      assert.deepEqual(taken.map((r) => [r.handle, r.expiresAt]), [[record.handle, now + 5000]]);
    });

    it('hands the sweeper at most `limit` expired tasks per call', async () => {
      const now = Date.now();
      for (let i = 0; i < 5; i++) await store!.createTask(taskRecord({ expiresAt: now - 10 + i }), 10);
      assert.equal((await store!.takeExpiredTasks(now, 2)).length, 2);
      assert.equal((await store!.takeExpiredTasks(now, 2)).length, 2);
      assert.equal((await store!.takeExpiredTasks(now, 2)).length, 1);
      assert.deepEqual(await store!.takeExpiredTasks(now, 2), []);
    });

    it('pages through tasks created in the same millisecond in handle order, without repeats', async () => {
      const createdAt = Date.now();
      const same = Array.from({ length: 5 }, () => taskRecord({ createdAt }));
      for (const r of same) await store!.createTask(r, 100);
      const seen: string[] = [];
      let after: { createdAt: number; handle: string } | undefined;
      for (;;) {
        const page = await store!.listTasks('owner-a', after, 2);
        if (page.length === 0) break;
        seen.push(...page.map((r) => r.handle));
        after = { createdAt: page.at(-1)!.createdAt, handle: page.at(-1)!.handle };
      }
      assert.deepEqual(seen, same.map((r) => r.handle).sort());
    });

    it('leaves expired tasks out of a listing', async () => {
      const live = taskRecord();
      await store!.createTask(taskRecord({ expiresAt: Date.now() - 1, createdAt: live.createdAt + 1 }), 10);
      await store!.createTask(live, 10);
      assert.deepEqual((await store!.listTasks('owner-a', undefined, 1)).map((r) => r.handle), [live.handle]);
    });

    it('returns a record exactly as stored: optional fields absent, any text intact', async () => {
      const { upstreamSession: _session, protocolVersion: _version, ...bare } = taskRecord({ era: 'modern' });
      const record = { ...bare, tool: 'scan_ünïcode_🚀', statusMessage: 'line one\nline "two" {x}', readOnce: true };
      await store!.createTask(record, 10);
      assert.deepEqual(await store!.getTask(record.handle), record);
      await store!.updateTask(record.handle, { statusMessage: undefined });
      const { statusMessage, ...rest } = (await store!.getTask(record.handle))!;
      assert.equal(statusMessage, undefined, 'a patch to undefined removes the message');
      const { statusMessage: _message, ...expected } = record;
      assert.deepEqual(rest, expected);
    });

    it('forgets a relayed server request after its lifetime', async () => {
      await store!.putServerRequest('tg-y', { upstream: 'tools', instance: 'http://a', upstreamId: 'r1' }, 50);
      await new Promise((r) => setTimeout(r, 80));
      assert.equal(await store!.takeServerRequest('tg-y'), undefined);
    });

    it('routes a relayed server request once', async () => {
      const route = { upstream: 'tools', instance: 'http://a', upstreamSession: 's', upstreamId: 0 };
      await store!.putServerRequest('tg-x', route, 60_000);
      assert.deepEqual(await store!.takeServerRequest('tg-x'), route);
      assert.equal(await store!.takeServerRequest('tg-x'), undefined);
    });

    it('is ready', async () => {
      assert.equal(await store!.isReady(), true);
    });
  });
}
