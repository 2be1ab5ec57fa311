/**
 * What the console adds to the task rows it sends (docs/console.md, "Task"): each task's polls
 * as the store booked them (every replica's, on a shared store), and what only this replica
 * knows, under `thisReplica`: the push listens open here. Read for the rows of one page (at most
 * MAX_PAGE) or one task, never for a whole scan: one read of the store per row, in parallel.
 */
import type { Store } from '../store/store.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { ReplicaFacts } from './console-context.js';
import type { TaskRow } from './task-rows.js';

export interface TaskPolls {
  /** The owner's tasks/get let through (to the backend, or to a gateway-run task's state). */
  readonly forwarded: number;
  /** Before the interval: answered from the last answer (poll.mode cached) or refused 429 (reject). */
  readonly early: number;
  /** Early past poll.abuseFactor: refused 429 in every mode. */
  readonly abusive: number;
  readonly lastPollAt?: string;
}

export interface ActiveTaskRow extends TaskRow {
  readonly polls: TaskPolls;
  readonly thisReplica: {
    /** subscriptions/listen streams open on this replica that were granted the task. */
    readonly pushListeners: number;
  };
}

/** `rows` with their activity; `records[i]` is the record behind `rows[i]`. */
export async function withActivity(rows: readonly TaskRow[], records: readonly TaskRecord[], store: Store, replica: ReplicaFacts): Promise<ActiveTaskRow[]> {
  const handles = records.map((record) => record.handle);
  const activity = await store.readPollActivity(handles);
  return rows.map((row, i) => {
    const polls = activity[i]!;
    return {
      ...row,
      polls: {
        forwarded: polls.forwarded,
        early: polls.early,
        abusive: polls.abusive,
        ...(polls.lastPollAt === undefined ? {} : { lastPollAt: new Date(polls.lastPollAt).toISOString() }),
      },
      thisReplica: { pushListeners: replica.pushListeners(handles[i]!) },
    };
  });
}
