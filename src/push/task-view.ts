/**
 * What a notifications/tasks carries: the DetailedTask exactly as tasks/get would answer it at
 * that moment (result or error inline once terminal, inputRequests while input is needed),
 * read from the store, so any replica renders the same thing.
 *
 * - A task the gateway runs itself: its record and state, rendered as tasks/get renders them
 *   (detailedTask of src/tasks/task-shapes.ts).
 * - A backend task: its poll snapshot, the last tasks/get answer the owner was given (by a
 *   client's poll, or by the polls and pushes of src/push/ itself). While it runs (or once
 *   cancelled) the record alone says everything; otherwise a snapshot that does not show the
 *   record's status is stale, and nothing is rendered until a fresher answer is stored.
 */
import { detailedTask } from '../tasks/task-shapes.js';
import type { Store } from '../store/store.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import { taskFromRecord, type JsonObject } from '../tasks/task-shapes.js';

export interface TaskView {
  readonly record: TaskRecord;
  /** The DetailedTask; undefined when no answer showing the record's status is held yet. */
  readonly task?: JsonObject;
}

/** Undefined when the task is unknown or expired. */
export async function readTaskView(store: Store, handle: string): Promise<TaskView | undefined> {
  const read = await store.readPollSnapshot(handle);
  if (!read) return undefined;
  const { record } = read;
  if (record.status === 'working' || record.status === 'cancelled') return { record, task: { ...taskFromRecord(record), resultType: 'complete' } };
  if (record.kind === 'provided') {
    const view = await store.readProvidedTask(handle);
    return view ? { record: view.record, task: detailedTask(view) } : undefined;
  }
  if (read.snapshot === undefined) return { record };
  const task = JSON.parse(read.snapshot) as JsonObject;
  return task.status === record.status ? { record, task } : { record };
}

/** A task whose status can change no more. */
export function hasEnded(view: TaskView): boolean {
  return isTerminalStatus(view.record.status);
}
