/**
 * The live-task scan half of the Store contract (called by defineStoreContract inside its
 * describe): every owner's unexpired tasks, in bounded pages, in one order on both stores.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { LiveTaskCursor, Store } from '../../../src/store/store.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { taskRecord } from '../../support/task-records.js';

/** Every page from the start; the handles in the order read, and how many pages it took. */
async function scanAll(store: Store, limit: number, now: number): Promise<{ handles: string[]; pages: number }> {
  const handles: string[] = [];
  let after: LiveTaskCursor | undefined;
  let pages = 0;
  for (;;) {
    const page = await store.scanLiveTasks(after, limit, now);
    pages++;
    assert.ok(page.records.length <= limit, 'a page holds at most `limit` records');
    handles.push(...page.records.map((r) => r.handle));
    if (!page.next) return { handles, pages };
    assert.ok(pages < 100, 'the scan ends');
    after = page.next;
  }
}

function inScanOrder(records: TaskRecord[]): string[] {
  return [...records].sort((a, b) => a.expiresAt - b.expiresAt || (a.handle < b.handle ? -1 : 1)).map((r) => r.handle);
}

export function defineScanContract(store: () => Store): void {
  it('scans every owner\'s live tasks by expiry, in bounded pages, each once', async () => {
    const now = Date.now();
    const records = [
      ...[0, 1, 2, 3].map((i) => taskRecord({ owner: 'owner-a', expiresAt: now + 60_000 + i * 1000 })),
      ...[0, 1, 2].map((i) => taskRecord({ owner: 'owner-b', era: 'modern', upstream: 'other', expiresAt: now + 60_500 + i * 1000 })),
      taskRecord({ owner: 'owner-c', status: 'completed', expiresAt: now + 90_000 }),
    ];
    for (const r of records) await store().createTask(r, 100);
    const { handles, pages } = await scanAll(store(), 3, now);
    assert.deepEqual(handles, inScanOrder(records));
    assert.equal(pages, 3);
    const whole = await store().scanLiveTasks(undefined, 100, now);
    assert.equal(whole.next, undefined, 'a page that comes up short is the last');
    assert.deepEqual(whole.records.find((r) => r.owner === 'owner-b'), records.find((r) => r.owner === 'owner-b' && r.expiresAt === now + 60_500));
  });

  it('pages through tasks that expire in the same millisecond without repeats or gaps', async () => {
    const now = Date.now();
    const expiresAt = now + 60_000;
    const same = Array.from({ length: 7 }, () => taskRecord({ expiresAt }));
    const later = taskRecord({ expiresAt: expiresAt + 1 });
    for (const r of [...same, later]) await store().createTask(r, 100);
    for (const limit of [1, 2, 3, 7, 8]) {
      const { handles } = await scanAll(store(), limit, now);
      assert.deepEqual(handles, inScanOrder([...same, later]), `pages of ${limit}`);
    }
  });

  it('leaves out expired and deleted tasks, and follows an extended lifetime', async () => {
    const now = Date.now();
    const expired = taskRecord({ expiresAt: now - 1 });
    const deleted = taskRecord();
    const extended = taskRecord({ expiresAt: now + 10_000 });
    const kept = taskRecord({ expiresAt: now + 20_000 });
    for (const r of [expired, deleted, extended, kept]) await store().createTask(r, 100);
    await store().deleteTask(deleted.handle);
    await store().updateTask(extended.handle, { expiresAt: now + 30_000, ttlMs: 30_000 });
    const { handles } = await scanAll(store(), 2, now);
    assert.deepEqual(handles, [kept.handle, extended.handle]);
    // Read later, the same tasks have expired: a scan at that time leaves them out too.
    assert.deepEqual((await scanAll(store(), 2, now + 25_000)).handles, [extended.handle]);
  });

  it('pages across seconds, a burst of tasks in one second among them, in one order', async () => {
    const now = Date.now();
    const base = (Math.floor(now / 1000) + 120) * 1000;
    // A burst: 23 tasks in one second at scattered milliseconds (some equal), between two
    // seconds of a few, and tasks inserted out of order, so neither insertion order nor
    // second boundaries give the answer.
    const burst = Array.from({ length: 23 }, (_, i) => taskRecord({ expiresAt: base + 1000 + ((i * 37) % 11) * 50 }));
    const before = [2, 0, 1].map((i) => taskRecord({ expiresAt: base + i * 300 }));
    const after = [1, 0].map((i) => taskRecord({ expiresAt: base + 5000 + i }));
    const records = [...after, ...burst, ...before];
    for (const r of records) await store().createTask(r, 100);
    for (const limit of [1, 4, 5, 13, 28, 29]) {
      const { handles } = await scanAll(store(), limit, now);
      assert.deepEqual(handles, inScanOrder(records), `pages of ${limit}`);
    }
  });

  it('scans an empty store as one empty page', async () => {
    const page = await store().scanLiveTasks(undefined, 10, Date.now());
    assert.deepEqual(page, { records: [] });
  });
}
