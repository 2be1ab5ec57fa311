/**
 * What a backend call's outcome makes of its task, by era (PROTOCOL-BRIEF §1):
 *   a JSON-RPC error              → failed, the error kept (tasks/result and tasks/get give it)
 *   a tool result, isError: true  → failed (legacy); completed with result.isError (modern)
 *   any other tool result         → completed, the result kept
 *   InputRequiredResult (modern)  → input_required, its inputRequests under keys unique over the
 *                                   task's life, its requestState kept for the retry (never shown);
 *                                   with a requestState alone, the call made again (call-again.ts)
 *   no answer (timeout, unreachable, unreadable reply, shutdown) → failed, saying why
 * tasks.provided.maxResultBytes bounds everything of the backend's a task keeps: the result, the
 * JSON-RPC error, the input asked (inputRequests and requestState together; legacy: the questions
 * left pending, together, task-driver.ts). Over it the task ends failed, saying so, and nothing
 * of it is kept: never a result silently cut, never megabytes stored and served.
 */
import type { EraWire } from '../task-model/task-wire.js';
import type { JsonObject, ProvidedState, ProvidedTaskView } from '../task-model/provided-state.js';
import { isTerminalStatus } from '../task-model/task-record.js';
import { isObject } from '../mcp/json.js';
import type { CallOutcome } from './call-runner.js';
import { ending, failureOutcome, type Decision } from './transitions.js';

export interface OutcomeLimits {
  readonly maxResultBytes: number;
  readonly statusMessageMaxLength: number;
}

/**
 * Modern: rounds one task may take (input asked, or the call made again with a requestState
 * alone); past it the task fails (a backend in a loop).
 */
export const MAX_ROUNDS = 100;

/** The status message of a task past MAX_ROUNDS. */
export const TOO_MANY_ROUNDS = `the backend asked for more than ${MAX_ROUNDS} rounds (input, or the call made again)`;

export type OutcomeStep =
  | { readonly kind: 'decide'; readonly decide: (view: ProvidedTaskView) => Decision }
  /** Modern: the backend wants its requestState back with no input asked: call again (call-again.ts). */
  | { readonly kind: 'retry'; readonly requestState: string }
  /** The call was stopped because the task was cancelled or is gone: nothing to write. */
  | { readonly kind: 'none' };

/** `callMs`: how long the call took, added to the task's backend time (ProvidedState.spentMs). */
export function stepForOutcome(outcome: CallOutcome, wire: EraWire, limits: OutcomeLimits, callMs: number): OutcomeStep {
  const max = limits.statusMessageMaxLength;
  if (outcome.kind === 'failure') {
    if (outcome.failure === 'aborted') return { kind: 'none' };
    return { kind: 'decide', decide: ending('failed', failureOutcome(outcome.message), outcome.message, max) };
  }
  const { response } = outcome;
  if (response.error) {
    const over = overCap('the backend\'s error', 'is', response.error, limits.maxResultBytes);
    if (over) return { kind: 'decide', decide: ending('failed', failureOutcome(over), over, max) };
    return { kind: 'decide', decide: ending('failed', { error: response.error }, response.error.message, max) };
  }
  const result = response.result;
  if (!isObject(result)) {
    const message = 'the backend answered the call without a result object';
    return { kind: 'decide', decide: ending('failed', failureOutcome(message), message, max) };
  }
  if (wire.input === 'input-requests' && result.resultType === 'input_required') return inputStep(result, limits, callMs);
  const over = overCap('the result', 'is', result, limits.maxResultBytes);
  if (over) return { kind: 'decide', decide: ending('failed', failureOutcome(over), over, max) };
  if (result.isError === true && wire.toolErrorStatus === 'failed') {
    return { kind: 'decide', decide: ending('failed', { result }, 'the tool reported an error', max) };
  }
  return { kind: 'decide', decide: ending('completed', { result }, undefined, max) };
}

/**
 * What a task may keep of the backend's answer, measured as stored (UTF-8 JSON): undefined
 * when within `max`, else the status message the task fails with.
 */
export function overCap(what: string, verb: 'is' | 'are', value: unknown, max: number): string | undefined {
  const size = Buffer.byteLength(JSON.stringify(value) ?? '');
  if (size <= max) return undefined;
  return `${what} (${size} bytes) ${verb} larger than tasks.provided.maxResultBytes (${max} bytes)`;
}

/** Modern MRTR: the input the backend asks for becomes the task's inputRequests. */
function inputStep(result: JsonObject, limits: OutcomeLimits, callMs: number): OutcomeStep {
  const maxMessage = limits.statusMessageMaxLength;
  const requests = isObject(result.inputRequests) ? result.inputRequests : {};
  const requestState = typeof result.requestState === 'string' ? result.requestState : undefined;
  // Both are kept until the next round (the state is stored; a retry without input holds it
  // through its pause), so both count against the cap, together.
  const over = overCap('the input the backend asks for', 'is', { inputRequests: requests, requestState }, limits.maxResultBytes);
  if (over) return { kind: 'decide', decide: ending('failed', failureOutcome(over), over, maxMessage) };
  // A request that is no object cannot be shown to the client: counted as not asked, so a
  // task never waits on questions nobody can see (input_required with nothing to answer).
  const keys = Object.keys(requests).filter((key) => isObject(requests[key]));
  if (keys.length === 0) {
    if (requestState !== undefined) return { kind: 'retry', requestState };
    const message = 'the backend asked for input without saying what';
    return { kind: 'decide', decide: ending('failed', failureOutcome(message), message, maxMessage) };
  }
  return {
    kind: 'decide',
    decide: (view) => {
      if (isTerminalStatus(view.record.status)) return undefined;
      const round = view.state.round + 1;
      if (round > MAX_ROUNDS) return ending('failed', failureOutcome(TOO_MANY_ROUNDS), TOO_MANY_ROUNDS, maxMessage)(view);
      const inputRequests: Record<string, JsonObject> = {};
      const inputKeys: Record<string, string> = {};
      for (const key of keys) {
        // Keys must stay unique over the task's life, and the backend may reuse its own.
        const shown = `${round}.${key}`;
        inputRequests[shown] = requests[key] as JsonObject;
        inputKeys[shown] = key;
      }
      const spentMs = (view.state.spentMs ?? 0) + callMs;
      const state: ProvidedState = { ...view.state, round, spentMs, inputRequests, inputKeys, requestState, inputResponses: {}, callId: undefined };
      return { patch: { status: 'input_required', statusMessage: undefined }, state };
    },
  };
}
