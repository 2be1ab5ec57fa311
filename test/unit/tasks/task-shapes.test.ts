import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { creationTaskObject, presentTask, readTask, recordedStatusMessage, sanitizeStatusMessage, taskFromRecord } from '../../../src/tasks/task-shapes.js';
import { decodeCursor, encodeCursor } from '../../../src/tasks/task-list.js';
import { decidePoll, enforcedInterval } from '../../../src/task-model/poll-rule.js';
import { isHandleShaped, isServerRequestId, mintHandle, mintServerRequestId } from '../../../src/tasks/handle.js';
import { GatewayError } from '../../../src/errors.js';
import { taskRecord } from '../store/store-contract.js';

describe('task objects of both generations', () => {
  it('reads a 2025 nested creation result and a 2026 flat one', () => {
    const legacy = { task: { taskId: 'u1', status: 'working', createdAt: 'c', lastUpdatedAt: 'l', ttl: 60000, pollInterval: 500 } };
    const legacyTask = creationTaskObject(legacy, 'legacy')!;
    assert.deepEqual(readTask(legacyTask, 'legacy'), { taskId: 'u1', status: 'working', statusMessage: undefined, createdAt: 'c', lastUpdatedAt: 'l', ttlMs: 60000, pollIntervalMs: 500 });
    const modern = { resultType: 'task', taskId: 'u2', status: 'working', createdAt: 'c', lastUpdatedAt: 'l', ttlMs: null, pollIntervalMs: 250 };
    assert.equal(creationTaskObject(modern, 'modern'), modern);
    assert.equal(readTask(modern, 'modern')?.ttlMs, null);
    assert.equal(creationTaskObject({ content: [] }, 'legacy'), undefined);
    assert.equal(creationTaskObject({ resultType: 'complete', taskId: 'x' }, 'modern'), undefined);
    assert.equal(readTask({ taskId: 'x', status: 'sleeping' }, 'legacy'), undefined);
  });

  it('presents a task to its owner: handle, effective ttl and interval, the status message the record keeps', () => {
    const record = taskRecord({ era: 'modern', ttlMs: 30_000, pollIntervalMs: 2000, statusMessage: recordedStatusMessage('a\u202Eb\nc\u0007', 100) });
    const task: Record<string, unknown> = { taskId: record.upstreamTaskId, status: 'working', ttlMs: 999_999, pollIntervalMs: 10, statusMessage: 'a\u202Eb\nc\u0007', extra: 1 };
    presentTask(task, record);
    assert.deepEqual(task, { taskId: record.handle, status: 'working', ttlMs: 30_000, pollIntervalMs: 2000, statusMessage: 'ab c', extra: 1 });
    const silent: Record<string, unknown> = { taskId: record.upstreamTaskId, status: 'working', statusMessage: 'raw' };
    presentTask(silent, { ...record, statusMessage: undefined });
    assert.equal('statusMessage' in silent, false, 'never a text the record does not keep');
    const legacy = taskRecord({ era: 'legacy' });
    assert.deepEqual(Object.keys(taskFromRecord(legacy)).sort(), ['createdAt', 'lastUpdatedAt', 'pollInterval', 'status', 'taskId', 'ttl']);
  });

  it('caps status messages on code points', () => {
    assert.equal(sanitizeStatusMessage('😀😀😀', 2), '😀😀');
    assert.equal(sanitizeStatusMessage('x'.repeat(10), 4), 'xxxx');
    assert.equal(sanitizeStatusMessage('x'.repeat(9) + '😀', 10), 'x'.repeat(9) + '😀', 'a pair at the limit stays whole');
  });

  it('drops lone surrogates, bidi, zero-width and control characters', () => {
    assert.equal(sanitizeStatusMessage('a\uD83Db\uDE00c', 100), 'abc');
    assert.equal(sanitizeStatusMessage('ok 😀', 100), 'ok 😀');
    assert.equal(sanitizeStatusMessage('\u202Eevil\u200B\u2066x\u0000\u009F\tend', 100), 'evilx end');
  });
});

describe('handles and cursors', () => {
  it('mints unguessable handles and recognises their shape only', () => {
    const a = mintHandle();
    assert.ok(isHandleShaped(a));
    assert.notEqual(a, mintHandle());
    assert.equal(Buffer.from(a, 'base64url').length, 24);
    assert.ok(!isHandleShaped('786512e2-9e0d-44bd-8f29-789f320fe840'));
    assert.ok(!isHandleShaped(42));
    assert.ok(isServerRequestId(mintServerRequestId()));
    assert.ok(!isServerRequestId(0));
  });

  it('round-trips a list cursor and refuses anything else with -32602', () => {
    const position = { createdAt: 1_700_000_000_000, handle: mintHandle() };
    assert.deepEqual(decodeCursor(encodeCursor(position)), position);
    for (const bad of ['', 'nope', 7, Buffer.from('[1]').toString('base64url'), 'x'.repeat(300)]) {
      assert.throws(() => decodeCursor(bad), (e: unknown) => e instanceof GatewayError && e.rpcCode === -32602);
    }
  });
});

describe('poll governance rule', () => {
  const rules = { intervalMs: 1000, toleranceMs: 50, abuseFactor: 3 };
  it('forwards the first poll and any poll after the interval, minus the tolerance', () => {
    const first = decidePoll(undefined, 10_000, rules);
    assert.equal(first.verdict, 'forward');
    const tolerated = decidePoll(first.next, 10_950, rules);
    assert.equal(tolerated.verdict, 'forward');
    assert.equal(tolerated.next.lastForwardedAt, 11_000, 'booked when it was due, so the schedule does not creep');
    assert.equal(decidePoll(first.next, 12_000, rules).next.lastForwardedAt, 12_000, 'a late poll is booked when it came');
    const early = decidePoll(first.next, 10_400, rules);
    assert.equal(early.verdict, 'early');
    assert.equal(early.retryAfterMs, 550);
  });

  it('measures from the last forwarded poll, so early polls do not push the next one back', () => {
    let state = decidePoll(undefined, 0, rules).next;
    for (const t of [300, 600, 900]) state = decidePoll(state, t, rules).next;
    assert.equal(decidePoll(state, 960, rules).verdict, 'forward');
  });

  it('calls it abuse past the factor, and forgives at the next allowed poll', () => {
    let state = decidePoll(undefined, 0, rules).next;
    const verdicts = [100, 200, 300, 400].map((t) => {
      const d = decidePoll(state, t, rules);
      state = d.next;
      return d.verdict;
    });
    assert.deepEqual(verdicts, ['early', 'early', 'early', 'abusive']);
    assert.equal(decidePoll(state, 1000, rules).verdict, 'forward');
  });

  it('enforces the floor and supplies a default', () => {
    assert.equal(enforcedInterval(200, 1000, 5000), 1000);
    assert.equal(enforcedInterval(3000, 1000, 5000), 3000);
    assert.equal(enforcedInterval(undefined, 0, 5000), 5000);
  });
});
