/**
 * The one step every status change of a provided task goes through (src/provided/transitions.ts),
 * against the real memory store: read, decide, write at the revision read, else read again.
 * Another replica's write is a direct write to the same store between the read and the write.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ending, failureOutcome, SHUTDOWN_MESSAGE, transition } from '../../../src/provided/transitions.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { ProvidedTaskView } from '../../../src/task-model/provided-state.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { waitFor } from '../../support/wait.js';
import { providedRecord, providedState } from '../../support/task-records.js';

let store: MemoryStore;
beforeEach(() => {
  store = new MemoryStore({ maxSessions: 10, maxTasks: 10 });
});
afterEach(() => store.close());

async function created(overrides: Partial<TaskRecord> = {}, state = providedState()): Promise<TaskRecord> {
  const record = providedRecord({ lastUpdatedAtIso: '2020-01-01T00:00:00.000Z', ...overrides });
  assert.equal(await store.createProvidedTask(record, state, 10), 'created');
  return record;
}

describe('transition', () => {
  it('writes what the step decides at the revision it read, and says what was before and after', async () => {
    const record = await created();
    const moved = await transition(store, record.handle, (view) => ({ patch: { status: 'input_required' }, state: { ...view.state, round: 1 } }));
    assert.ok(moved);
    assert.equal(moved.status, 'input_required');
    assert.equal(moved.before.rev, 1);
    assert.equal(moved.before.record.status, 'working');
    assert.equal(moved.after.state.round, 1);
    const read = await store.readProvidedTask(record.handle);
    assert.equal(read?.rev, 2);
    assert.deepEqual(read?.record, moved.after.record, 'after is the record as stored');
    assert.deepEqual(read?.state, moved.after.state);
  });

  it('stamps lastUpdatedAt with the time of the step, unless the step sets it', async () => {
    const record = await created();
    const before = Date.now();
    const moved = await transition(store, record.handle, (view) => ({ patch: {}, state: view.state }));
    const stamped = Date.parse(moved!.after.record.lastUpdatedAtIso);
    assert.ok(stamped >= before - 1 && stamped <= Date.now() + 1, moved!.after.record.lastUpdatedAtIso);
    const set = await transition(store, record.handle, (view) => ({ patch: { lastUpdatedAtIso: '2031-05-06T07:08:09.000Z' }, state: view.state }));
    assert.equal(set?.after.record.lastUpdatedAtIso, '2031-05-06T07:08:09.000Z');
  });

  it('writes nothing and answers undefined when the step has nothing to do, or the task is gone', async () => {
    const record = await created();
    assert.equal(await transition(store, record.handle, () => undefined), undefined);
    assert.equal((await store.readProvidedTask(record.handle))?.rev, 1, 'the revision did not move');
    let asked = false;
    assert.equal(await transition(store, 'no-such-handle-no-such-handle-xx', () => ((asked = true), undefined)), undefined);
    assert.equal(asked, false, 'no step is asked about a task that is not there');
  });

  it('reads again and decides again when another write came between its read and its write', async () => {
    const record = await created();
    const seen: number[] = [];
    const moved = await transition(store, record.handle, (view) => {
      seen.push(view.rev);
      if (seen.length === 1) {
        // Another replica moves the task on after this step read it (the memory store writes at once).
        void store.writeProvidedTask(record.handle, view.rev, { statusMessage: 'from the other replica' }, { ...view.state, round: 7 });
      }
      return { patch: { status: 'input_required' }, state: { ...view.state, spentMs: 5 } };
    });
    assert.deepEqual(seen, [1, 2], 'decided on the other write\'s revision the second time');
    const read = await store.readProvidedTask(record.handle);
    assert.equal(read?.rev, 3);
    assert.equal(read?.record.statusMessage, 'from the other replica', 'the other step was not lost');
    assert.equal(read?.state.round, 7, 'its state neither');
    assert.equal(read?.record.status, 'input_required');
    assert.equal(moved?.before.rev, 2);
  });

  it('gives up, rather than spin, on a task something keeps writing', async () => {
    const record = await created();
    let attempts = 0;
    await assert.rejects(
      transition(store, record.handle, (view) => {
        attempts++;
        void store.writeProvidedTask(record.handle, view.rev, {}, view.state);
        return { patch: { status: 'completed' }, state: view.state };
      }),
      /kept changing under 16 attempts/,
    );
    assert.equal(attempts, 16);
    assert.equal((await store.getTask(record.handle))?.status, 'working', 'none of its steps was written');
  });

  it('announces a written step to every replica watching the task', async () => {
    const record = await created();
    let heard = 0;
    const unsubscribe = store.events.subscribe(record.handle, () => heard++);
    try {
      await transition(store, record.handle, (view) => ({ patch: { statusMessage: 'moved' }, state: view.state }));
      await waitFor(() => heard === 1, 'the announcement of the step');
    } finally {
      unsubscribe();
    }
  });
});

describe('ending', () => {
  const running: ProvidedTaskView = {
    record: providedRecord({ status: 'input_required' }),
    state: providedState({
      round: 3,
      retries: 2,
      spentMs: 1234,
      inputRequests: { '3.name': { method: 'elicitation/create' } },
      inputKeys: { '3.name': 'name' },
      inputResponses: { '3.name': { action: 'accept' } },
      requestState: 'opaque',
      pendingRequests: [{ jsonrpc: '2.0', id: 'tg-1', method: 'elicitation/create' }],
    }),
    rev: 4,
  };

  it('keeps only the outcome of what the task held for its call, and what the task took so far', () => {
    const outcome = { result: { content: [{ type: 'text', text: 'done' }] } };
    const decision = ending('completed', outcome, undefined, 100)(running);
    assert.ok(decision);
    assert.deepEqual(decision.patch, { status: 'completed', statusMessage: undefined });
    const { state } = decision;
    assert.deepEqual(state.outcome, outcome);
    for (const gone of ['call', 'callId', 'inputRequests', 'inputKeys', 'inputResponses', 'requestState', 'pendingRequests'] as const) {
      assert.equal(state[gone], undefined, gone);
    }
    assert.equal(state.round, 3);
    assert.equal(state.retries, 2);
    assert.equal(state.spentMs, 1234);
    assert.equal(state.instance, running.state.instance);
  });

  it('never moves a task that ended, whatever the new end', () => {
    for (const status of ['completed', 'failed', 'cancelled'] as const) {
      const ended = { ...running, record: { ...running.record, status } };
      for (const next of ['completed', 'failed', 'cancelled'] as const) {
        assert.equal(ending(next, failureOutcome('late'), 'late', 100)(ended), undefined, `${status} → ${next}`);
      }
    }
  });

  it('makes the status message safe and cuts it to the policy\'s length, on whole code points', () => {
    const decision = ending('failed', failureOutcome('x'), 'line one\r\nline two\u202e\u0007 and 😀😀😀', 20)(running);
    const message = decision!.patch.statusMessage!;
    assert.equal(message.includes('\n') || message.includes('\r'), false, JSON.stringify(message));
    assert.equal(message.includes('\u202e') || message.includes('\u0007'), false, JSON.stringify(message));
    assert.ok(Array.from(message).length <= 20);
    assert.equal(/[\ud800-\udbff]$/.test(message), false, 'no half of a surrogate pair at the cut');
  });

  it('ends a cancelled task with no outcome', () => {
    const decision = ending('cancelled', undefined, 'The task was cancelled by request.', 100)(running);
    assert.equal(decision?.patch.status, 'cancelled');
    assert.equal(decision?.state.outcome, undefined);
  });
});

describe('failureOutcome', () => {
  it('is a JSON-RPC internal error carrying the reason', () => {
    assert.deepEqual(failureOutcome(SHUTDOWN_MESSAGE), { error: { code: -32603, message: 'the gateway shut down before the backend answered' } });
  });
});
