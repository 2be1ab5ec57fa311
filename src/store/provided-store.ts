/**
 * What the store keeps for tasks the gateway runs itself (DESIGN.md §9, src/provided/), and
 * how replicas tell each other that a task changed. Both stores implement both interfaces; the
 * shared contract (test/unit/store/provided-contract.ts) holds them to the same behaviour.
 */
import type { ProvidedState, ProvidedTaskView } from '../task-model/provided-state.js';
import type { TaskPatch, TaskRecord } from '../task-model/task-record.js';
import type { CreateTaskOutcome } from './create-outcome.js';

export interface ProvidedStore {
  /**
   * Stores a provided task's record with its state, under the same checks as createTask (the
   * owner's live limit, a full store), at revision 1. Like createTask, it resolves only once
   * every replica can read the task.
   */
  createProvidedTask(record: TaskRecord, state: ProvidedState, maxLivePerOwner: number): Promise<CreateTaskOutcome>;
  /** The record with its state and revision; undefined when unknown, expired, or not provided. */
  readProvidedTask(handle: string): Promise<ProvidedTaskView | undefined>;
  /**
   * Applies `patch` to the record and replaces the state, only while the task is still at
   * `rev` (it is then at rev + 1) and has not ended. False when another step came first or the
   * task is gone: read it again and decide again. False too, changing nothing, once the task is
   * terminal: a task that ended never changes, whatever a caller decided. A patch that changes
   * the status drops the poll snapshot (an early poll answered from it would show the task
   * going back), and the indexes follow as they do for updateTask (a task that ends no longer
   * counts against its owner).
   */
  writeProvidedTask(handle: string, rev: number, patch: TaskPatch, state: ProvidedState): Promise<boolean>;
  /**
   * The backend's progress on a running task: sets the record's statusMessage and
   * lastUpdatedAtIso, and nothing else (no revision check, no new revision: progress does not
   * compete with the steps above, it only must never outlive the task's end). False, changing
   * nothing, when the task is terminal, expired, gone, or not provided: a progress write that
   * arrives after a cancel or the outcome leaves the end as it was written.
   */
  writeProvidedProgress(handle: string, statusMessage: string, lastUpdatedAtIso: string): Promise<boolean>;
  /**
   * `holder` (a replica) runs the task's backend call until `until` (epoch ms), taking or
   * renewing the lease. False when the task is gone or terminal, or another holder's lease
   * has not lapsed yet: the caller must stop its call.
   */
  holdLease(handle: string, holder: string, until: number): Promise<boolean>;
  /** Gives the lease up: the call ended, or the task waits for input and holds no call. */
  releaseLease(handle: string, holder: string): Promise<void>;
  /**
   * Up to `limit` handles whose lease lapsed before `now` without being released or renewed:
   * the replica running the call stopped. Each is handed to one caller, which fails the task
   * if it still says `working`. Taking a lease holds it for LAPSED_LEASE_CLAIM_MS under no
   * replica's name: the holder that lapsed can no longer renew it (it must stop its call),
   * and should the caller die before it ends the task, the lease lapses again and is handed
   * out again. A lapsed lease of a task that ended, expired or is gone is dropped, not
   * handed out.
   */
  takeLapsedLeases(now: number, limit: number): Promise<string[]>;
}

/** How long a lease handed out by takeLapsedLeases stays taken (the taker's time to end the task). */
export const LAPSED_LEASE_CLAIM_MS = 15_000;

/** The holder of a lease that takeLapsedLeases handed out: no replica's name (a replica's never starts with NUL). */
export const TAKEN_LEASE_HOLDER = '\u0000taken';

/**
 * Change announcements between replicas. Best effort by design: a replica may miss some (a
 * reconnect, Redis restarting), so the task in the store stays the truth, and a listener is
 * also called whenever announcements may have been missed, to read it again.
 */
export interface TaskEvents {
  /** Announces that a task changed (status, input asked or answered, outcome). */
  publish(handle: string): Promise<void>;
  /**
   * Calls `listener` after every change of `handle` announced on any replica, and after this
   * replica may have missed announcements. Returns the function that unsubscribes.
   */
  subscribe(handle: string, listener: () => void): () => void;
  close(): Promise<void>;
}
