/**
 * Every change of a provided task's status goes through one step: read the task, decide, write
 * it back only if nobody changed it meanwhile (the store's revision check), else read again.
 * So a cancel and the call's answer arriving together, or two tasks/update on two replicas,
 * never overwrite each other, and a terminal status is never left (a cancelled task stays
 * cancelled when the backend answers afterwards).
 */
import type { Store } from '../store/store.js';
import type { ProvidedOutcome, ProvidedState, ProvidedTaskView } from '../task-model/provided-state.js';
import { isTerminalStatus, type TaskPatch, type TaskRecord, type TaskStatus } from '../task-model/task-record.js';
import { sanitizeStatusMessage } from '../task-model/status-message.js';

/** What a step decides: the record's patch and the state to write, or nothing to do. */
export type Decision = { readonly patch: TaskPatch; readonly state: ProvidedState } | undefined;

/** Tries beyond this mean something keeps writing the task: give up rather than spin. */
const MAX_ATTEMPTS = 16;

export interface Transition {
  /** The task before the step that was written. */
  readonly before: ProvidedTaskView;
  /** The record and state after it. */
  readonly after: { readonly record: TaskRecord; readonly state: ProvidedState };
  /** The status after it. */
  readonly status: TaskStatus;
}

/**
 * Applies `decide` to the task as it is now; undefined when the task is gone or `decide` had
 * nothing to do. Announces the change to every replica.
 */
export async function transition(store: Store, handle: string, decide: (view: ProvidedTaskView) => Decision): Promise<Transition | undefined> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const view = await store.readProvidedTask(handle);
    if (!view) return undefined;
    const decision = decide(view);
    if (!decision) return undefined;
    const patch: TaskPatch = { lastUpdatedAtIso: new Date().toISOString(), ...decision.patch };
    if (await store.writeProvidedTask(handle, view.rev, patch, decision.state)) {
      // Best effort: a replica that misses it reads the task on its next check anyway.
      store.events.publish(handle).catch(() => undefined);
      const record = { ...view.record, ...patch };
      return { before: view, after: { record, state: decision.state }, status: record.status };
    }
  }
  throw new Error(`provided task kept changing under ${MAX_ATTEMPTS} attempts to move it`);
}

/** A step that ends a task that is still running, with `outcome` and a status message. */
export function ending(status: 'completed' | 'failed' | 'cancelled', outcome: ProvidedOutcome | undefined, message: string | undefined, maxMessage: number) {
  return (view: ProvidedTaskView): Decision => {
    if (isTerminalStatus(view.record.status)) return undefined;
    // Only the outcome is kept: nothing retries or answers an ended task, so the call, the
    // input asked and answered and the backend's requestState go.
    const state: ProvidedState = {
      ...view.state,
      outcome,
      call: undefined,
      callId: undefined,
      inputRequests: undefined,
      inputKeys: undefined,
      inputResponses: undefined,
      requestState: undefined,
      pendingRequests: undefined,
    };
    const patch: TaskPatch = { status, statusMessage: message === undefined ? undefined : sanitizeStatusMessage(message, maxMessage) };
    return { patch, state };
  };
}

/** Why a task ends failed when the gateway shuts down before its backend answered. */
export const SHUTDOWN_MESSAGE = 'the gateway shut down before the backend answered';

/** The error a task that failed without a JSON-RPC error of the backend's is answered with. */
export function failureOutcome(message: string): ProvidedOutcome {
  return { error: { code: -32603, message } };
}
