/**
 * The task model's helpers (src/task-model/task-record.ts): which statuses exist and end a
 * task, who may reach a task, and when a patch would change nothing (the stores skip the
 * write then).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { changesNothing, isInScope, isTaskStatus, isTerminalStatus, type TaskStatus } from '../../../src/task-model/task-record.js';
import { taskRecord } from '../../support/task-records.js';

const ALL: TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

describe('task statuses', () => {
  it('knows the five statuses of the protocol, and nothing else a peer might send', () => {
    for (const status of ALL) assert.equal(isTaskStatus(status), true, status);
    for (const other of ['Working', 'WORKING', 'running', 'submitted', 'unknown', '', ' working', 'completed\u0000', 'toString', '__proto__', 'constructor']) {
      assert.equal(isTaskStatus(other), false, JSON.stringify(other));
    }
    for (const value of [undefined, null, 0, 1, true, {}, [], ['working'], { toString: () => 'working' }, new String('working')]) {
      assert.equal(isTaskStatus(value), false, String(value));
    }
  });

  it('calls completed, failed and cancelled terminal, and only them', () => {
    assert.deepEqual(ALL.filter(isTerminalStatus), ['completed', 'failed', 'cancelled']);
  });
});

describe('isInScope', () => {
  const record = taskRecord({ owner: 'alice', era: 'modern', upstream: 'tools' });

  it('lets the owner reach the task through the era and upstream it was created on', () => {
    assert.equal(isInScope(record, { owner: 'alice', era: 'modern', upstream: 'tools' }), true);
  });

  it('keeps out another owner, the other era and another upstream, each on its own', () => {
    assert.equal(isInScope(record, { owner: 'bob', era: 'modern', upstream: 'tools' }), false);
    assert.equal(isInScope(record, { owner: 'alice', era: 'legacy', upstream: 'tools' }), false);
    assert.equal(isInScope(record, { owner: 'alice', era: 'modern', upstream: 'other' }), false);
  });

  it('compares keys exactly: no case folding, no trimming, no prefix', () => {
    for (const owner of ['Alice', 'alice ', ' alice', 'alic', 'alice\u0000', 'alicealice']) {
      assert.equal(isInScope(record, { owner, era: 'modern', upstream: 'tools' }), false, JSON.stringify(owner));
    }
  });
});

describe('changesNothing', () => {
  const record = taskRecord({ status: 'working', statusMessage: 'half way', pollIntervalMs: 1000, ttlMs: 60_000 });

  it('holds for an empty patch and for one that repeats the record', () => {
    assert.equal(changesNothing(record, {}), true);
    const same = { status: record.status, statusMessage: record.statusMessage, pollIntervalMs: record.pollIntervalMs, ttlMs: record.ttlMs, expiresAt: record.expiresAt, lastUpdatedAtIso: record.lastUpdatedAtIso };
    assert.equal(changesNothing(record, same), true);
  });

  it('fails for any one field that differs', () => {
    assert.equal(changesNothing(record, { status: 'completed' }), false);
    assert.equal(changesNothing(record, { statusMessage: 'nearly done' }), false);
    assert.equal(changesNothing(record, { pollIntervalMs: 1001 }), false);
    assert.equal(changesNothing(record, { ttlMs: 60_001 }), false);
    assert.equal(changesNothing(record, { expiresAt: record.expiresAt + 1 }), false);
    assert.equal(changesNothing(record, { lastUpdatedAtIso: '2030-01-01T00:00:00.000Z' }), false);
    assert.equal(changesNothing(record, { status: 'working', pollIntervalMs: 2000 }), false, 'one of several');
  });

  it('takes a field patched to undefined for its removal: a change when the record has it, none when it has not', () => {
    assert.equal(changesNothing(record, { statusMessage: undefined }), false);
    const { statusMessage: _message, ...withoutMessage } = record;
    assert.equal(changesNothing(withoutMessage, { statusMessage: undefined }), true);
  });

  it('takes an empty message for a message: setting one where there was none is a change', () => {
    const { statusMessage: _message, ...withoutMessage } = record;
    assert.equal(changesNothing(withoutMessage, { statusMessage: '' }), false);
  });
});
