/**
 * A task's audit timeline for the console's task page (src/console/audit-timeline.ts): the
 * audit trail stays whole, the timeline keeps only what this replica wrote about tasks created
 * while the console was on, runs of like events as one entry, and a bounded number of them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { auditSchema } from '../../../src/config/sections/audit.js';
import { AuditTimeline } from '../../../src/console/audit-timeline.js';
import { createAuditLog, type AuditEvent } from '../../../src/observability/audit.js';

/** The real audit log, writing to `lines`, tapped by a timeline that is on. */
function tapped(): { timeline: AuditTimeline; record: (event: AuditEvent) => void; lines: string[] } {
  const lines: string[] = [];
  const audit = createAuditLog(auditSchema.parse({}), { buffered: false, flushInterval: 250 }, () => undefined, { write: (line: string) => void lines.push(line) });
  const timeline = new AuditTimeline();
  timeline.active = true;
  const log = timeline.tap(audit);
  return { timeline, record: (event) => log.record(event), lines };
}

const created: AuditEvent = { event: 'created', allowed: true, handleHash: 'task-1', handle: 'raw-handle-1', principal: { issuer: 'https://issuer.example', subject: 'alice' }, status: 'working' };
const polled = (status: string): AuditEvent => ({ event: 'get', allowed: true, handleHash: 'task-1', handle: 'raw-handle-1', status });

describe('console audit timeline', () => {
  it('passes every event on to the audit trail, and keeps neither the handle nor the principal', () => {
    const { timeline, record, lines } = tapped();
    record(created);
    record({ event: 'denied', allowed: false, reason: 'not_found', handle: 'made-up' });
    assert.equal(lines.length, 2, 'the trail got both, the one about no task too');
    const entries = timeline.entries('task-1');
    assert.equal(entries?.length, 1);
    const text = JSON.stringify(entries);
    assert.ok(!text.includes('raw-handle-1') && !text.includes('alice'), text);
  });

  it('starts a timeline only with a creation: lookups of made-up handles fill nothing', () => {
    const { timeline, record } = tapped();
    record({ ...polled('working'), handleHash: 'guessed' });
    record({ event: 'denied', allowed: false, reason: 'not_found', handleHash: 'guessed' });
    assert.equal(timeline.entries('guessed'), undefined);
  });

  it('keeps nothing while the console is off', () => {
    const { timeline, record } = tapped();
    timeline.active = false;
    record(created);
    assert.equal(timeline.entries('task-1'), undefined);
  });

  it('makes a run of polls that saw one status one entry with a count; a new status starts another', () => {
    const { timeline, record } = tapped();
    record(created);
    for (let i = 0; i < 3; i++) record(polled('working'));
    record(polled('completed'));
    const entries = timeline.entries('task-1')!;
    assert.deepEqual(entries.map((e) => [e.event, e.status, e.count]), [
      ['created', 'working', 1],
      ['get', 'working', 3],
      ['get', 'completed', 1],
    ]);
    assert.ok(entries[1]!.lastAt >= entries[1]!.at);
  });

  it('never folds an operator\'s act into a run: each names who acted and why', () => {
    const { timeline, record } = tapped();
    record(created);
    const act: AuditEvent = { event: 'operator_cancel', allowed: true, handleHash: 'task-1', operator: { name: 'oncall', role: 'operator', via: 'token' }, operatorReason: 'stuck' };
    record(act);
    record(act);
    const acts = timeline.entries('task-1')!.filter((e) => e.event === 'operator_cancel');
    assert.equal(acts.length, 2);
    assert.deepEqual(acts[0]!.operator, { name: 'oncall', role: 'operator', via: 'token' });
    assert.equal(acts[0]!.operatorReason, 'stuck');
  });

  it('holds at most 50 entries a task, the creation and the latest ones', () => {
    const { timeline, record } = tapped();
    record(created);
    // Alternating statuses: no two in a row are alike, so each is an entry of its own.
    for (let i = 0; i < 120; i++) record(polled(i % 2 === 0 ? 'working' : 'input_required'));
    const entries = timeline.entries('task-1')!;
    assert.equal(entries.length, 50);
    assert.equal(entries[0]!.event, 'created');
    assert.equal(entries.at(-1)!.status, 'input_required', 'the latest event is kept');
  });
});
