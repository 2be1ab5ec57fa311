/**
 * Task objects as the two generations put them on the wire (PROTOCOL-BRIEF §2.4, §5.2):
 *   2025-11-25  { taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttl, pollInterval? }
 *               nested in a creation result as { task: {…} }
 *   2026-07-28  { taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs? }
 *               flat, with resultType "task" on creation and "complete" on tasks/get
 * Reading is lenient about what the gateway does not need; presenting rewrites exactly the
 * fields the gateway owns (id, lifetime, poll interval, status message), hides the backend id
 * in the rest (backend-ids.ts), and keeps it.
 *
 * ext-tasks since e4345978 (docs/architecture.md, "Protocol revisions"): ttlMs and
 * pollIntervalMs are integers, a failed task's `error` is a JSON-RPC error object, and every
 * task-shaped result carries its resultType. The 2025-11-25 schema has integer ttl and
 * pollInterval too. What a backend sends otherwise is made so here, on the way in and out.
 */
import type { Era } from '../mcp/era.js';
import type { ProvidedTaskView } from '../task-model/provided-state.js';
import { isTaskStatus, type TaskRecord, type TaskStatus } from '../task-model/task-record.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import { hideBackendId, hideBackendIdInText, type TaskIds } from './backend-ids.js';

export interface TaskFields {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt?: string;
  lastUpdatedAt?: string;
  /** null: the backend keeps it forever; undefined: not said. */
  ttlMs?: number | null;
  pollIntervalMs?: number;
}

const TTL_KEY: Record<Era, string> = { legacy: 'ttl', modern: 'ttlMs' };
const POLL_KEY: Record<Era, string> = { legacy: 'pollInterval', modern: 'pollIntervalMs' };

// One definition for every room (src/mcp/json.ts); re-exported while importers move there.
export { isObject, type JsonObject };

/** Reads a task object of either era; undefined when it is not one. */
export function readTask(value: unknown, era: Era): TaskFields | undefined {
  if (!isObject(value) || typeof value.taskId !== 'string' || !isTaskStatus(value.status)) return undefined;
  const ttl = value[TTL_KEY[era]];
  const poll = value[POLL_KEY[era]];
  return {
    taskId: value.taskId,
    status: value.status,
    statusMessage: typeof value.statusMessage === 'string' ? value.statusMessage : undefined,
    createdAt: typeof value.createdAt === 'string' ? value.createdAt : undefined,
    lastUpdatedAt: typeof value.lastUpdatedAt === 'string' ? value.lastUpdatedAt : undefined,
    ttlMs: ttl === null ? null : isNonNegative(ttl) ? wholeTtlMs(ttl) : undefined,
    pollIntervalMs: isNonNegative(poll) ? wholeIntervalMs(poll) : undefined,
  };
}

/** A lifetime in whole milliseconds, rounded down: the gateway never promises more than was said. */
export function wholeTtlMs(ms: number): number {
  return Math.min(Math.floor(ms), Number.MAX_SAFE_INTEGER);
}

/** A poll interval in whole milliseconds, rounded up: a client is never asked to poll sooner than the backend asked. */
export function wholeIntervalMs(ms: number): number {
  return Math.min(Math.ceil(ms), Number.MAX_SAFE_INTEGER);
}

/** The task object inside a creation result, or undefined when the result created no task. */
export function creationTaskObject(result: unknown, era: Era): JsonObject | undefined {
  if (!isObject(result)) return undefined;
  if (era === 'legacy') return isObject(result.task) && typeof result.task.taskId === 'string' ? result.task : undefined;
  return result.resultType === 'task' && typeof result.taskId === 'string' ? result : undefined;
}

/**
 * Rewrites a task object in place for its owner: the handle for the backend id, the
 * effective lifetime and poll interval, and the status message as the record keeps it
 * (sanitised once, when the record was written: recordedStatusMessage). `record` is the task
 * as it stands after learning from this very object, so the two say the same.
 */
export function presentTask(task: JsonObject, record: TaskRecord): void {
  task.taskId = record.handle;
  task[TTL_KEY[record.era]] = wholeTtlMs(record.ttlMs);
  task[POLL_KEY[record.era]] = wholeIntervalMs(record.pollIntervalMs);
  if (record.statusMessage === undefined) delete task.statusMessage;
  else task.statusMessage = record.statusMessage;
  hideBackendId(task, record, 'task');
}

/**
 * presentTask for a DetailedTask (a tasks/get answer, a notifications/tasks): in 2026 also the
 * inline parts the extension shapes, a failed task's error as a JSON-RPC error object and the
 * inline result with its own resultType (ext-tasks rejects one without it, WIRE-NOTES).
 */
export function presentDetailedTask(task: JsonObject, record: TaskRecord): void {
  if (record.era === 'modern') {
    if (record.status === 'failed' || task.error !== undefined) task.error = jsonRpcErrorOf(task.error);
    if (isObject(task.result)) task.result.resultType ??= 'complete';
  }
  presentTask(task, record);
}

/**
 * FailedTask.error is `{code, message, data?}`. A backend that sends something else (a string,
 * no code, nothing at all) still gets its failure shown, in the one shape clients can read.
 */
export function jsonRpcErrorOf(value: unknown): JsonObject {
  const given = isObject(value) ? value : {};
  const code = Number.isSafeInteger(given.code) ? given.code : -32603;
  const message = typeof given.message === 'string' ? given.message : typeof value === 'string' ? value : 'The task failed; the backend gave no error';
  return given.data === undefined ? { code, message } : { code, message, data: given.data };
}

/** A task object built from the record alone (tasks/list items; answers for early polls). */
export function taskFromRecord(record: TaskRecord): JsonObject {
  const task: JsonObject = {
    taskId: record.handle,
    status: record.status,
    createdAt: record.createdAtIso,
    lastUpdatedAt: record.lastUpdatedAtIso,
    [TTL_KEY[record.era]]: wholeTtlMs(record.ttlMs),
    [POLL_KEY[record.era]]: wholeIntervalMs(record.pollIntervalMs),
  };
  if (record.statusMessage !== undefined) task.statusMessage = record.statusMessage;
  return task;
}

// What is not visible text, or can hide or reorder the text a person or a model is shown:
// controls (Cc); format characters (Cf: bidirectional controls, zero-width characters, the
// soft hyphen, U+061C, U+180E, U+FFF9-FFFB, and the tag block U+E0000-E007F, invisible text
// that models read, the "ASCII smuggling" trick); default-ignorable code points (variation
// selectors, U+034F, the Hangul fillers); private-use (Co) and unassigned (Cn, as of the
// Unicode version of the running Node) code points; and lone surrogates (Cs: with the u flag
// only unpaired halves match; no UTF-8 writer can encode them). Unicode properties rather than
// a list of ranges, so that a class is covered whole. The cost: joiners and variation
// selectors inside emoji sequences go too (a family emoji shows as its members).
const UNSAFE_CHARACTERS = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;
// Line breaks and tabs become spaces: a status message is one line.
const LINE_BREAKS = /[\t\n\v\f\r\u0085\u2028\u2029]+/g;

/**
 * The status message a task record keeps: every writer of a record (creation, a poll, a
 * notification) passes the backend's text through here, so every answer built from the record
 * (tasks/list, early polls, relayed objects) shows the same safe text, with the handle where
 * the backend named its own id.
 */
export function recordedStatusMessage(message: string | undefined, maxLength: number, ids: TaskIds): string | undefined {
  return message === undefined ? undefined : sanitizeStatusMessage(message, maxLength, ids);
}

/** `ids`: the task's, when the text may name the backend id (stripped first, so no invisible character can split it). */
export function sanitizeStatusMessage(message: string, maxLength: number, ids?: TaskIds): string {
  const stripped = message.replace(LINE_BREAKS, ' ').replace(UNSAFE_CHARACTERS, '');
  const cleaned = ids ? hideBackendIdInText(stripped, ids) : stripped;
  // Cut on code points so a surrogate pair is never split.
  const points = Array.from(cleaned);
  return points.length > maxLength ? points.slice(0, maxLength).join('') : cleaned;
}

function isNonNegative(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/** The 2026 DetailedTask of a task the gateway runs: the task, and whatever it holds for the client in its status. */
export function detailedTask({ record, state }: ProvidedTaskView): JsonObject {
  const task: JsonObject = { ...taskFromRecord(record), resultType: 'complete' };
  if (record.status === 'input_required' && state.inputRequests) task.inputRequests = state.inputRequests;
  const outcome = state.outcome;
  if (outcome && (record.status === 'completed' || record.status === 'failed')) {
    // ext-tasks rejects an inlined result without its own resultType (WIRE-NOTES).
    if ('result' in outcome) task.result = { ...outcome.result, resultType: outcome.result.resultType ?? 'complete' };
    else task.error = outcome.error;
  }
  return task;
}
