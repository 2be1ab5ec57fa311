/**
 * A live task as the console shows it (src/console/task-rows.ts): named by the hash of its
 * handle, never the handle; the creator shown only as the policy allows; filters and sorting
 * applied to the rows one scan read.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { consoleSchema } from '../../../src/config/sections/console.js';
import { countBy, matches, principalOf, sortRows, taskRow, type TaskQuery, type TaskRow } from '../../../src/console/task-rows.js';
import { createHandleHasher } from '../../../src/observability/handle-hash.js';
import { taskRecord } from '../../support/task-records.js';

const REDACTED = consoleSchema.parse({});
const SHOWN = consoleSchema.parse({ principals: 'shown' });
const hash = createHandleHasher('console-test-salt');
const NOW = 1_800_000_000_000;
const QUERY: TaskQuery = { sort: 'age', order: 'asc' };

/** A row as taskRow makes it, with `overrides` on top. */
function row(overrides: Partial<TaskRow> & { id: string }): TaskRow {
  return { ...taskRow(taskRecord({ createdAt: NOW, expiresAt: NOW + 60_000 }), hash, SHOWN, NOW), ...overrides };
}

describe('console task rows', () => {
  it('names a task by the hash of its handle, never the handle, and carries no backend id or session', () => {
    const record = taskRecord({ createdAt: NOW - 5000, expiresAt: NOW + 55_000 });
    const shown = taskRow(record, hash, REDACTED, NOW);
    assert.equal(shown.id, hash(record.handle));
    const text = JSON.stringify(shown);
    for (const secret of [record.handle, record.upstreamTaskId, record.upstreamSession!]) assert.ok(!text.includes(secret), `${secret} shown`);
    assert.equal(shown.ageMs, 5000);
    assert.equal(shown.ttlLeftMs, 55_000);
    assert.equal(shown.createdAt, new Date(NOW - 5000).toISOString());
  });

  it('shows the creator\'s subject only with console.principals: shown', () => {
    const record = taskRecord({ owner: 'key-1', creatorIssuer: 'https://issuer.example', creatorSubject: 'alice' });
    assert.deepEqual(principalOf(record, REDACTED), { key: 'key-1', issuer: 'https://issuer.example' });
    assert.deepEqual(principalOf(record, SHOWN), { key: 'key-1', issuer: 'https://issuer.example', subject: 'alice' });
    assert.deepEqual(principalOf(taskRecord({ owner: 'key-2' }), SHOWN), { key: 'key-2' }, 'a record from before principals were shown has no subject');
  });

  it('tells backend tasks, tasks the gateway runs and background calls apart', () => {
    assert.equal(taskRow(taskRecord(), hash, REDACTED, NOW).kind, 'backend');
    assert.equal(taskRow(taskRecord({ kind: 'provided' }), hash, REDACTED, NOW).kind, 'gateway');
    const background = taskRecord({ kind: 'provided', backgroundCall: 'unread' });
    assert.equal(taskRow(background, hash, REDACTED, NOW).kind, 'background');
  });

  it('never shows a negative age or lifetime left, and falls back to the creation time for an unreadable lastUpdatedAt', () => {
    const expired = taskRow(taskRecord({ createdAt: NOW + 10, expiresAt: NOW - 10, lastUpdatedAtIso: 'yesterday-ish' }), hash, REDACTED, NOW);
    assert.equal(expired.ageMs, 0);
    assert.equal(expired.ttlLeftMs, 0);
    assert.equal(expired.lastUpdatedAt, new Date(NOW + 10).toISOString());
  });

  it('cuts a long statusMessage for the table and strips what a reader cannot see', () => {
    const shown = taskRow(taskRecord({ statusMessage: `a\u200Bb\n${'x'.repeat(400)}` }), hash, REDACTED, NOW);
    assert.equal(Array.from(shown.statusMessage!).length, 256);
    assert.ok(shown.statusMessage!.startsWith('ab '));
    assert.equal('statusMessage' in taskRow(taskRecord(), hash, REDACTED, NOW), false);
  });

  it('filters by upstream, tool, kind and status, and by principal key or part of its subject or issuer', () => {
    const alice = row({ id: 'a', principal: { key: 'key-a', subject: 'Alice', issuer: 'https://one.example' }, upstream: 'tools', tool: 'scan', status: 'working' });
    const bob = row({ id: 'b', principal: { key: 'key-b' }, upstream: 'other', tool: 'scan', status: 'failed', kind: 'gateway' });
    const pick = (query: Partial<TaskQuery>) => [alice, bob].filter((r) => matches(r, { ...QUERY, ...query })).map((r) => r.id);
    assert.deepEqual(pick({}), ['a', 'b']);
    assert.deepEqual(pick({ upstream: 'other' }), ['b']);
    assert.deepEqual(pick({ tool: 'scan', statuses: ['working', 'input_required'] }), ['a']);
    assert.deepEqual(pick({ kind: 'gateway' }), ['b']);
    assert.deepEqual(pick({ principal: 'key-b' }), ['b']);
    assert.deepEqual(pick({ principal: 'alic' }), ['a'], 'part of the subject, whatever the case');
    assert.deepEqual(pick({ principal: 'ONE.example' }), ['a'], 'part of the issuer');
    assert.deepEqual(pick({ principal: 'key' }), [], 'a key is matched whole');
  });

  it('sorts by status in the order an operator reads it, and breaks ties by id so pages are stable', () => {
    const rows = [
      row({ id: 'd', status: 'completed' }),
      row({ id: 'c', status: 'working' }),
      row({ id: 'a', status: 'input_required' }),
      row({ id: 'b', status: 'working' }),
    ];
    assert.deepEqual(sortRows([...rows], 'status', 'asc').map((r) => r.id), ['a', 'b', 'c', 'd']);
    assert.deepEqual(sortRows([...rows], 'status', 'desc').map((r) => r.id), ['d', 'b', 'c', 'a'], 'ties still by id, whichever the order');
    assert.deepEqual(sortRows([row({ id: 'y', ageMs: 5 }), row({ id: 'x', ageMs: 9 })], 'age', 'desc').map((r) => r.id), ['x', 'y']);
  });

  it('counts rows per value, a tool named __proto__ like any other', () => {
    const rows = [row({ id: '1', tool: '__proto__' }), row({ id: '2', tool: '__proto__' }), row({ id: '3', tool: 'scan' })];
    const counts = countBy(rows, (r) => r.tool);
    assert.deepEqual(Object.entries(counts), [
      ['__proto__', 2],
      ['scan', 1],
    ]);
    assert.equal(Object.getPrototypeOf(counts), Object.prototype);
  });
});
