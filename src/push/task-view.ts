/**
 * What a notifications/tasks carries: the DetailedTask exactly as tasks/get would answer it at
 * that moment (result or error inline once terminal, inputRequests while input is needed),
 * read from the store, so any replica renders the same thing.
 *
 * - A task the gateway runs itself: its record and state, rendered as tasks/get renders them
 *   (detailedTask of src/task-model/task-wire.ts).
 * - A backend task: its poll snapshot, the last tasks/get answer the owner was given (by a
 *   client's poll, or by the polls and pushes of src/push/ itself). While it runs (or once
 *   cancelled) the record alone says everything; otherwise a snapshot that does not show the
 *   record's status is stale, and nothing is rendered until a fresher answer is stored.
 */
import type { JsonObject } from '../mcp/json.js';
import { detailedTask, MODERN_WIRE } from '../task-model/task-wire.js';
import type { Store } from '../store/store.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';

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
  // Listens are modern: what the record alone says, when that is the whole DetailedTask.
  const known = MODERN_WIRE.recordAnswer(record);
  if (known) return { record, task: known };
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
