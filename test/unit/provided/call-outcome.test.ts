/**
 * How a backend call's answer becomes its task's outcome (src/provided/call-outcome.ts), by
 * era, with the answers a careless or hostile backend gives: errors, non-objects, oversized
 * results, input asked in malformed shapes, a loop of rounds.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CallOutcome } from '../../../src/provided/call-runner.js';
import { MAX_ROUNDS, overCap, stepForOutcome, TOO_MANY_ROUNDS, type OutcomeLimits, type OutcomeStep } from '../../../src/provided/call-outcome.js';
import type { Decision } from '../../../src/provided/transitions.js';
import type { ProvidedState, ProvidedTaskView } from '../../../src/task-model/provided-state.js';
import type { TaskStatus } from '../../../src/task-model/task-record.js';
import { providedRecord, providedState } from '../../support/task-records.js';
import { LEGACY_WIRE, MODERN_WIRE, wireOf } from '../../../src/task-model/task-wire.js';

const LIMITS: OutcomeLimits = { maxResultBytes: 1000, statusMessageMaxLength: 60 };

function answer(response: { result?: unknown; error?: { code: number; message: string; data?: unknown } }): CallOutcome {
  return { kind: 'answer', status: 200, response: { kind: 'response', id: 'tg-call-1', ...response } };
}

function view(status: TaskStatus = 'working', state: Partial<ProvidedState> = {}): ProvidedTaskView {
  return { record: providedRecord({ status }), state: providedState(state), rev: 1 };
}

/** The decision a `decide` step makes on `on` (a running task by default). */
function decided(step: OutcomeStep, on: ProvidedTaskView = view()): NonNullable<Decision> {
  assert.equal(step.kind, 'decide', JSON.stringify(step));
  const decision = step.kind === 'decide' ? step.decide(on) : undefined;
  assert.ok(decision, 'the step moves the task');
  return decision;
}

describe('stepForOutcome: answers without input asked', () => {
  for (const era of ['legacy', 'modern'] as const) {
    it(`${era}: a tool result completes the task and is kept`, () => {
      const result = { content: [{ type: 'text', text: '42' }] };
      const decision = decided(stepForOutcome(answer({ result }), wireOf(era), LIMITS, 10));
      assert.deepEqual(decision.patch, { status: 'completed', statusMessage: undefined });
      assert.deepEqual(decision.state.outcome, { result });
    });

    it(`${era}: a JSON-RPC error fails the task, the error kept and its message shown`, () => {
      const error = { code: -32602, message: 'Unknown tool: nope', data: { tool: 'nope' } };
      const decision = decided(stepForOutcome(answer({ error }), wireOf(era), LIMITS, 10));
      assert.deepEqual(decision.patch, { status: 'failed', statusMessage: 'Unknown tool: nope' });
      assert.deepEqual(decision.state.outcome, { error });
    });

    it(`${era}: a result that is no object fails the task, saying so`, () => {
      for (const result of [null, 'done', 42, true, [{ type: 'text', text: 'x' }], undefined]) {
        const decision = decided(stepForOutcome(answer({ result }), wireOf(era), LIMITS, 10));
        assert.equal(decision.patch.status, 'failed', JSON.stringify(result));
        assert.equal(decision.patch.statusMessage, 'the backend answered the call without a result object');
        assert.deepEqual(decision.state.outcome, { error: { code: -32603, message: 'the backend answered the call without a result object' } });
      }
    });
  }

  it('legacy: a tool result with isError: true fails the task, the result kept', () => {
    const result = { content: [{ type: 'text', text: 'disk full' }], isError: true };
    const decision = decided(stepForOutcome(answer({ result }), LEGACY_WIRE, LIMITS, 10));
    assert.deepEqual(decision.patch, { status: 'failed', statusMessage: 'the tool reported an error' });
    assert.deepEqual(decision.state.outcome, { result });
  });

  it('modern: a tool result with isError: true completes the task with result.isError', () => {
    const result = { content: [{ type: 'text', text: 'disk full' }], isError: true };
    const decision = decided(stepForOutcome(answer({ result }), MODERN_WIRE, LIMITS, 10));
    assert.equal(decision.patch.status, 'completed');
    assert.deepEqual(decision.state.outcome, { result });
  });

  it('legacy: only isError true is an error, not a truthy look-alike', () => {
    for (const isError of ['true', 1, {}]) {
      const decision = decided(stepForOutcome(answer({ result: { content: [], isError } }), LEGACY_WIRE, LIMITS, 10));
      assert.equal(decision.patch.status, 'completed', JSON.stringify(isError));
    }
  });

  it('legacy: a result that says input_required is a plain result there (MRTR is 2026\'s)', () => {
    const result = { resultType: 'input_required', inputRequests: { name: { method: 'elicitation/create' } } };
    assert.equal(decided(stepForOutcome(answer({ result }), LEGACY_WIRE, LIMITS, 10)).patch.status, 'completed');
  });

  it('cuts a long backend error message to the policy\'s length, keeping the whole error', () => {
    const error = { code: -32000, message: 'x'.repeat(500) };
    const decision = decided(stepForOutcome(answer({ error }), MODERN_WIRE, LIMITS, 10));
    assert.equal(decision.patch.statusMessage, 'x'.repeat(60));
    assert.deepEqual(decision.state.outcome, { error });
  });

  it('writes nothing for a call stopped because its task was cancelled or is gone', () => {
    assert.deepEqual(stepForOutcome({ kind: 'failure', failure: 'aborted', message: 'cancelled' }, LEGACY_WIRE, LIMITS, 10), { kind: 'none' });
  });

  it('fails the task saying why when the call had no answer', () => {
    for (const failure of ['timeout', 'unreachable', 'bad_reply', 'shutdown'] as const) {
      const message = `no answer: ${failure}`;
      const decision = decided(stepForOutcome({ kind: 'failure', failure, message }, MODERN_WIRE, LIMITS, 10));
      assert.deepEqual(decision.patch, { status: 'failed', statusMessage: message });
      assert.deepEqual(decision.state.outcome, { error: { code: -32603, message } });
    }
  });

  it('leaves a task that ended meanwhile as it ended', () => {
    const step = stepForOutcome(answer({ result: { content: [] } }), MODERN_WIRE, LIMITS, 10);
    assert.equal(step.kind === 'decide' && step.decide(view('cancelled')), undefined);
  });
});

describe('stepForOutcome: tasks.provided.maxResultBytes', () => {
  it('fails the task over the cap and keeps nothing of the result, saying how large it was', () => {
    const result = { content: [{ type: 'text', text: 'y'.repeat(2000) }] };
    const decision = decided(stepForOutcome(answer({ result }), MODERN_WIRE, { ...LIMITS, statusMessageMaxLength: 200 }, 10));
    assert.equal(decision.patch.status, 'failed');
    assert.match(decision.patch.statusMessage!, /^the result \(\d+ bytes\) is larger than tasks\.provided\.maxResultBytes \(1000 bytes\)$/);
    assert.equal(JSON.stringify(decision.state.outcome).includes('yyyy'), false, 'none of the result is kept');
  });

  it('applies to the backend\'s JSON-RPC error as well', () => {
    const error = { code: -32000, message: 'boom', data: 'z'.repeat(2000) };
    const decision = decided(stepForOutcome(answer({ error }), LEGACY_WIRE, { ...LIMITS, statusMessageMaxLength: 200 }, 10));
    assert.match(decision.patch.statusMessage!, /^the backend's error \(\d+ bytes\) is larger than/);
    assert.equal(JSON.stringify(decision.state.outcome).includes('zzzz'), false);
  });

  it('applies to a legacy isError result, before it is kept', () => {
    const decision = decided(stepForOutcome(answer({ result: { content: [{ type: 'text', text: 'e'.repeat(2000) }], isError: true } }), LEGACY_WIRE, LIMITS, 10));
    assert.equal(JSON.stringify(decision.state.outcome).includes('eeee'), false);
  });

  it('keeps a result of exactly the cap', () => {
    const base = JSON.stringify({ content: [{ type: 'text', text: '' }] }).length;
    const result = { content: [{ type: 'text', text: 'k'.repeat(LIMITS.maxResultBytes - base) }] };
    assert.equal(Buffer.byteLength(JSON.stringify(result)), LIMITS.maxResultBytes);
    assert.equal(decided(stepForOutcome(answer({ result }), MODERN_WIRE, LIMITS, 10)).patch.status, 'completed');
  });
});

describe('overCap', () => {
  it('measures what is stored: UTF-8 bytes of the JSON, not characters', () => {
    const text = 'é'.repeat(10); // 10 characters, 20 bytes, 22 with the quotes
    assert.equal(overCap('the result', 'is', text, 22), undefined);
    assert.equal(overCap('the result', 'is', text, 21), 'the result (22 bytes) is larger than tasks.provided.maxResultBytes (21 bytes)');
    assert.equal(overCap('the questions', 'are', ['😀'], 5), 'the questions (8 bytes) are larger than tasks.provided.maxResultBytes (5 bytes)');
  });

  it('takes a value JSON cannot write for nothing kept', () => {
    assert.equal(overCap('the result', 'is', undefined, 0), undefined);
  });
});

describe('stepForOutcome: 2026 input asked (MRTR)', () => {
  const asking = (result: Record<string, unknown>) => answer({ result: { resultType: 'input_required', ...result } });

  it('asks the client under keys unique over the task\'s life, keeps the backend\'s keys and requestState', () => {
    const request = { method: 'elicitation/create', params: { message: 'Your name?' } };
    const decision = decided(stepForOutcome(asking({ inputRequests: { name: request }, requestState: 'opaque-1' }), MODERN_WIRE, LIMITS, 250), view('working', { round: 2, spentMs: 1000 }));
    assert.deepEqual(decision.patch, { status: 'input_required', statusMessage: undefined });
    const { state } = decision;
    assert.equal(state.round, 3);
    assert.deepEqual(state.inputRequests, { '3.name': request });
    assert.deepEqual(state.inputKeys, { '3.name': 'name' });
    assert.equal(state.requestState, 'opaque-1');
    assert.deepEqual(state.inputResponses, {}, 'answers of an earlier round are not carried over');
    assert.equal(state.spentMs, 1250, 'the call\'s time is added to the task\'s backend time');
    assert.equal(state.callId, undefined, 'no call runs while the client is asked');
    assert.ok(state.call, 'the call is kept, to be made again with the answers');
  });

  it('gives a key the backend reuses in a later round a new name for the client', () => {
    const step = stepForOutcome(asking({ inputRequests: { name: { method: 'elicitation/create' } } }), MODERN_WIRE, LIMITS, 0);
    const first = decided(step, view('working', { round: 0 })).state;
    const second = decided(step, view('working', { round: first.round })).state;
    assert.deepEqual(Object.keys(first.inputRequests!), ['1.name']);
    assert.deepEqual(Object.keys(second.inputRequests!), ['2.name']);
  });

  it('calls again, with nothing for the client, when the backend gives a requestState alone', () => {
    assert.deepEqual(stepForOutcome(asking({ requestState: 'again' }), MODERN_WIRE, LIMITS, 10), { kind: 'retry', requestState: 'again' });
    assert.deepEqual(stepForOutcome(asking({ inputRequests: {}, requestState: 'again' }), MODERN_WIRE, LIMITS, 10), { kind: 'retry', requestState: 'again' });
    assert.deepEqual(stepForOutcome(asking({ inputRequests: 'nonsense', requestState: 'again' }), MODERN_WIRE, LIMITS, 10), { kind: 'retry', requestState: 'again' });
  });

  it('fails the task when the backend asks for input without saying what, and gives nothing to call again with', () => {
    for (const shape of [{}, { inputRequests: {} }, { inputRequests: [{ method: 'elicitation/create' }] }, { requestState: 42 }, { inputRequests: null, requestState: { not: 'a string' } }]) {
      const decision = decided(stepForOutcome(asking(shape), MODERN_WIRE, LIMITS, 10));
      assert.deepEqual(decision.patch, { status: 'failed', statusMessage: 'the backend asked for input without saying what' }, JSON.stringify(shape));
    }
  });

  it('treats input requests that are no objects as not asked: the task never waits on a question it cannot show', () => {
    const malformed = { inputRequests: { name: 'What is your name?', age: 42, list: [1], none: null } };
    const decision = decided(stepForOutcome(asking(malformed), MODERN_WIRE, LIMITS, 10));
    assert.deepEqual(decision.patch, { status: 'failed', statusMessage: 'the backend asked for input without saying what' });
    assert.deepEqual(stepForOutcome(asking({ ...malformed, requestState: 'r' }), MODERN_WIRE, LIMITS, 10), { kind: 'retry', requestState: 'r' });
    const mixed = decided(stepForOutcome(asking({ inputRequests: { bad: 'x', good: { method: 'elicitation/create' } } }), MODERN_WIRE, LIMITS, 10));
    assert.deepEqual(Object.keys(mixed.state.inputRequests!), ['1.good'], 'the well-formed one is asked, alone');
  });

  it('counts the input asked and the requestState together against maxResultBytes', () => {
    const inputRequests = { name: { method: 'elicitation/create', params: { message: 'q'.repeat(500) } } };
    const within = stepForOutcome(asking({ inputRequests }), MODERN_WIRE, LIMITS, 10);
    assert.equal(decided(within).patch.status, 'input_required');
    const over = decided(stepForOutcome(asking({ inputRequests, requestState: 's'.repeat(600) }), MODERN_WIRE, { ...LIMITS, statusMessageMaxLength: 200 }, 10));
    assert.equal(over.patch.status, 'failed');
    assert.match(over.patch.statusMessage!, /^the input the backend asks for \(\d+ bytes\) is larger than/);
    assert.equal(over.state.requestState, undefined, 'nothing of it is kept');
    assert.equal(over.state.inputRequests, undefined);
    // A requestState alone, to be held through the pause before the call again, is capped too.
    assert.equal(decided(stepForOutcome(asking({ requestState: 's'.repeat(2000) }), MODERN_WIRE, LIMITS, 10)).patch.status, 'failed');
  });

  it(`fails the task past ${MAX_ROUNDS} rounds (a backend in a loop)`, () => {
    const step = stepForOutcome(asking({ inputRequests: { again: { method: 'elicitation/create' } } }), MODERN_WIRE, { ...LIMITS, statusMessageMaxLength: 200 }, 10);
    assert.equal(decided(step, view('working', { round: MAX_ROUNDS - 1 })).state.round, MAX_ROUNDS, 'the last round allowed');
    const past = decided(step, view('working', { round: MAX_ROUNDS }));
    assert.deepEqual(past.patch, { status: 'failed', statusMessage: TOO_MANY_ROUNDS });
    assert.deepEqual(past.state.outcome, { error: { code: -32603, message: TOO_MANY_ROUNDS } });
  });

  it('asks nothing of a task that ended before the backend asked', () => {
    const step = stepForOutcome(asking({ inputRequests: { name: { method: 'elicitation/create' } } }), MODERN_WIRE, LIMITS, 10);
    for (const status of ['completed', 'failed', 'cancelled'] as const) assert.equal(step.kind === 'decide' && step.decide(view(status)), undefined, status);
  });
});
