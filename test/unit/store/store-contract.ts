/**
 * The behaviour every Store must have. Each implementation's test file calls
 * defineStoreContract with a factory; the memory and Redis stores pass the same tests.
 */
import { after, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { PollDecisionWithSnapshot, PollLimits, Store } from '../../../src/store/store.js';
import type { TaskPatch, TaskRecord } from '../../../src/task-model/task-record.js';
import { definePollContract } from './store-poll-contract.js';
import { defineScanContract } from './store-scan-contract.js';
import { OWNER_A, scopeOf, taskRecord } from '../../support/task-records.js';

export interface StoreFactory {
  /** A store holding nothing; called before every test. */
  create(): Promise<Store>;
}

/** A tasks/get by the task's owner, which the store must answer with a poll decision. */
export async function pollAsOwner(store: Store, record: TaskRecord, now: number, limits: PollLimits): Promise<PollDecisionWithSnapshot> {
  const opened = await store.openPoll(record.handle, scopeOf(record), now, limits);
  if (opened.outcome !== 'polled') assert.fail(`the owner's poll was answered ${opened.outcome}`);
  return opened.decision;
}

/** What a forwarded poll writes back: a poll's patch always names the status and expiresAt. */
export function pollPatch(record: TaskRecord, patch: TaskPatch = {}): TaskPatch {
  return { status: record.status, lastUpdatedAtIso: new Date().toISOString(), ttlMs: record.ttlMs, expiresAt: record.expiresAt, pollIntervalMs: record.pollIntervalMs, ...patch };
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
      const first = await store!.listTasks(OWNER_A, undefined, 2);
      assert.deepEqual(first.map((r) => r.handle), [mine[4]!.handle, mine[3]!.handle]);
      const last = first.at(-1)!;
      const second = await store!.listTasks(OWNER_A, { createdAt: last.createdAt, handle: last.handle }, 10);
      assert.deepEqual(second.map((r) => r.handle), [mine[2]!.handle, mine[1]!.handle, mine[0]!.handle]);
      assert.deepEqual(await store!.listTasks({ ...OWNER_A, owner: 'nobody' }, undefined, 10), []);
    });

    it('lists only the tasks in scope: another era or upstream of the same owner is left out, and pages stay full', async () => {
      const base = Date.now();
      const inScope = [0, 1, 2].map((i) => taskRecord({ createdAt: base + i * 10 }));
      for (const r of inScope) await store!.createTask(r, 100);
      // Newer than every task in scope, so a filter applied after the query would leave pages short.
      for (let i = 0; i < 4; i++) {
        await store!.createTask(taskRecord({ era: 'modern', createdAt: base + 100 + i }), 100);
        await store!.createTask(taskRecord({ upstream: 'other', createdAt: base + 200 + i }), 100);
      }
      const first = await store!.listTasks(OWNER_A, undefined, 2);
      assert.deepEqual(first.map((r) => r.handle), [inScope[2]!.handle, inScope[1]!.handle]);
      const rest = await store!.listTasks(OWNER_A, { createdAt: first[1]!.createdAt, handle: first[1]!.handle }, 2);
      assert.deepEqual(rest.map((r) => r.handle), [inScope[0]!.handle]);
      assert.equal((await store!.listTasks({ ...OWNER_A, era: 'modern' }, undefined, 10)).length, 4);
      assert.equal((await store!.listTasks({ ...OWNER_A, upstream: 'other' }, undefined, 10)).length, 4);
    });

    definePollContract(() => store!);
    defineScanContract(() => store!);

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
      const record = taskRecord({ pollIntervalMs: 10_000 });
      await store!.createTask(record, 10);
      const now = Date.now();
      const limits = { toleranceMs: 0, abuseFactor: 100 };
      const decisions = await Promise.all(Array.from({ length: 6 }, () => pollAsOwner(store!, record, now, limits)));
      assert.equal(decisions.filter((d) => d.verdict === 'forward').length, 1);
      assert.deepEqual(decisions.filter((d) => d.verdict === 'early').map((d) => d.next.earlyCount).sort(), [1, 2, 3, 4, 5]);
    });

    it('forgets a deleted task everywhere: list, backend id, poll state', async () => {
      const record = taskRecord({ pollIntervalMs: 10_000 });
      await store!.createTask(record, 10);
      const limits = { toleranceMs: 0, abuseFactor: 5 };
      const now = Date.now();
      await pollAsOwner(store!, record, now, limits);
      await store!.recordPoll(record, pollPatch(record), '{"status":"working"}');
      await store!.deleteTask(record.handle);
      assert.deepEqual(await store!.listTasks(scopeOf(record), undefined, 10), []);
      assert.equal(await store!.findTaskHandle(record.upstream, record.instance, record.upstreamTaskId), undefined);
      assert.deepEqual(await store!.openPoll(record.handle, scopeOf(record), now + 1, limits), { outcome: 'not_found' });
      // The same record again (as a test can, a client cannot) starts with a fresh poll clock.
      await store!.createTask(record, 10);
      assert.equal((await pollAsOwner(store!, record, now + 1, limits)).verdict, 'forward');
      assert.equal((await pollAsOwner(store!, record, now + 2, limits)).snapshot, undefined, 'and without the old snapshot');
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
        const page = await store!.listTasks(OWNER_A, after, 2);
        if (page.length === 0) break;
        seen.push(...page.map((r) => r.handle));
        after = { createdAt: page.at(-1)!.createdAt, handle: page.at(-1)!.handle };
      }
      assert.deepEqual(seen, same.map((r) => r.handle).sort());
    });

    it('lists newest first whatever order the tasks were stored in, around deleted ones', async () => {
      const base = Date.now();
      // Stored out of creation order (a clock step, a replica's late write), ties included.
      const offsets = [5, 1, 9, 3, 3, 7, 0, 9, 2, 6];
      const records = offsets.map((offset) => taskRecord({ createdAt: base + offset }));
      for (const r of records) await store!.createTask(r, 100);
      const gone = [records[2]!, records[6]!, records[4]!];
      for (const r of gone) await store!.deleteTask(r.handle);
      const expected = records
        .filter((r) => !gone.includes(r))
        .sort((a, b) => b.createdAt - a.createdAt || (a.handle < b.handle ? -1 : 1))
        .map((r) => r.handle);
      for (const limit of [1, 3, 7, 10]) {
        const seen: string[] = [];
        let after: { createdAt: number; handle: string } | undefined;
        for (let pages = 0; pages < 20; pages++) {
          const page = await store!.listTasks(OWNER_A, after, limit);
          if (page.length === 0) break;
          seen.push(...page.map((r) => r.handle));
          after = { createdAt: page.at(-1)!.createdAt, handle: page.at(-1)!.handle };
        }
        assert.deepEqual(seen, expected, `pages of ${limit}`);
      }
    });

    it('leaves expired tasks out of a listing', async () => {
      const live = taskRecord();
      await store!.createTask(taskRecord({ expiresAt: Date.now() - 1, createdAt: live.createdAt + 1 }), 10);
      await store!.createTask(live, 10);
      assert.deepEqual((await store!.listTasks(OWNER_A, undefined, 1)).map((r) => r.handle), [live.handle]);
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

    it('keeps a task\'s trace link, for the calls the gateway makes for the task later', async () => {
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const live = taskRecord({ traceparent });
      const expired = taskRecord({ traceparent, expiresAt: Date.now() - 1 });
      await store!.createTask(live, 10);
      await store!.createTask(expired, 10);
      assert.equal((await store!.getTask(live.handle))?.traceparent, traceparent);
      const taken = await store!.takeExpiredTasks(Date.now(), 100);
      assert.equal(taken.find((r) => r.handle === expired.handle)?.traceparent, traceparent);
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
