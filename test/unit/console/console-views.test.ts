/**
 * The console's read side over one scan (src/console/console-views.ts): the task listing
 * (filters and pages over the rows, counts over every task scanned) and the principals listing
 * (most live tasks first, a prober that owns nothing still shown, suspensions read for the
 * page), against the memory limit store and the real per-replica activity tally.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { consoleSchema } from '../../../src/config/sections/console.js';
import { listPrincipals, listTasks, principalActivityRow } from '../../../src/console/console-views.js';
import type { LiveTasks } from '../../../src/console/live-scan.js';
import { createHandleHasher } from '../../../src/observability/handle-hash.js';
import { PrincipalActivity } from '../../../src/observability/principal-activity.js';
import { MemoryLimitStore } from '../../../src/store/memory-limit-store.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { taskRecord } from '../../support/task-records.js';

const POLICY = consoleSchema.parse({ principals: 'shown' });
const hash = createHandleHasher('console-test-salt');

function scanOf(records: TaskRecord[], truncated = false): LiveTasks {
  const byId = new Map(records.map((r) => [hash(r.handle), r]));
  return { at: Date.now(), records, truncated, byId: (id) => byId.get(id) };
}

describe('console task listing', () => {
  const records = [
    taskRecord({ owner: 'a', tool: 'scan', status: 'working', createdAt: Date.now() - 3000 }),
    taskRecord({ owner: 'a', tool: 'scan', status: 'failed', createdAt: Date.now() - 2000 }),
    taskRecord({ owner: 'b', tool: 'report', status: 'working', upstream: 'other', createdAt: Date.now() - 1000 }),
  ];

  it('counts every task scanned, whatever the filter, and pages the filtered rows', () => {
    const listing = listTasks(scanOf(records, true), { tool: 'scan', sort: 'age', order: 'desc' }, { offset: 1, limit: 5 }, hash, POLICY);
    assert.equal(listing.scanned, 3);
    assert.equal(listing.truncated, true);
    assert.equal(listing.total, 2, 'two pass the filter');
    assert.deepEqual(listing.tasks.map((t) => t.id), [hash(records[1]!.handle)], 'the oldest first, then offset 1');
    assert.deepEqual(listing.counts.status, { working: 2, failed: 1 });
    assert.deepEqual(listing.counts.tool, { scan: 2, report: 1 });
    assert.deepEqual(listing.counts.upstream, { tools: 2, other: 1 });
    assert.deepEqual(listing.counts.kind, { backend: 3 });
  });
});

describe('console principals listing', () => {
  it('lists owners by live tasks, adds a prober this replica saw refused though it owns nothing, and reads suspensions', async () => {
    const limits = new MemoryLimitStore();
    const activity = new PrincipalActivity();
    activity.active = true;
    const now = Date.now();
    activity.refused('prober', 'https://issuer.example', 'not_found', now);
    activity.poll('busy', 'https://issuer.example', now);
    await limits.suspend('busy', now + 60_000, now);
    const scan = scanOf([
      taskRecord({ owner: 'idle', status: 'completed', creatorSubject: 'ivy' }),
      taskRecord({ owner: 'busy', status: 'working', upstream: 'b-side' }),
      taskRecord({ owner: 'busy', status: 'input_required', upstream: 'a-side', creatorSubject: 'bea' }),
    ]);
    const { total, principals } = await listPrincipals(scan, { offset: 0, limit: 10 }, limits, POLICY, activity);
    assert.equal(total, 3);
    assert.deepEqual(principals.map((p) => [p.key, p.liveTasks, p.tasks]), [
      ['busy', 2, 2],
      ['idle', 0, 1],
      ['prober', 0, 0],
    ]);
    const busy = principals[0]!;
    assert.equal(busy.subject, 'bea', 'a later record that knows its creator names it');
    assert.deepEqual(busy.upstreams, ['a-side', 'b-side']);
    assert.deepEqual(busy.status, { working: 1, input_required: 1 });
    assert.ok(busy.suspendedForMs > 0 && busy.suspendedForMs <= 60_000);
    assert.equal(busy.thisReplica.pollsPerMinute, 1);
    const prober = principals[2]!;
    assert.equal(prober.issuer, 'https://issuer.example');
    assert.equal(prober.suspendedForMs, 0);
    assert.equal(prober.thisReplica.refusals.not_found, 1);
  });

  it('shows no activity for a principal this replica has not seen, and dates what it has', () => {
    const activity = new PrincipalActivity();
    assert.deepEqual(principalActivityRow(activity, 'nobody', Date.now()), { pollsPerMinute: 0, refusals: { not_found: 0, denied: 0, throttled: 0 }, enumerationAlerts: 0 });
    activity.active = true;
    activity.alert('loud', 1_800_000_000_000);
    const row = principalActivityRow(activity, 'loud', 1_800_000_000_000);
    assert.equal(row.enumerationAlerts, 1);
    assert.equal(row.lastAlertAt, new Date(1_800_000_000_000).toISOString());
    assert.equal(row.since, new Date(1_800_000_000_000).toISOString());
  });
});
