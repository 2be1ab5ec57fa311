/**
 * Task objects as the two generations put them on the wire (PROTOCOL-BRIEF §2.4, §5.2):
 *   2025-11-25  { taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttl, pollInterval? }
 *               nested in a creation result as { task: {…} }
 *   2026-07-28  { taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs? }
 *               flat, with resultType "task" on creation and "complete" on tasks/get
 * Reading is lenient about what the gateway does not need; presenting rewrites exactly the
 * fields the gateway owns (id, lifetime, poll interval, status message) and keeps the rest.
 */
import type { Era } from '../mcp/era.js';
import { isTaskStatus, type TaskRecord, type TaskStatus } from '../task-model/task-record.js';
import { isObject, type JsonObject } from '../mcp/json.js';

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
    ttlMs: ttl === null ? null : isNonNegative(ttl) ? ttl : undefined,
    pollIntervalMs: isNonNegative(poll) ? poll : undefined,
  };
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
  task[TTL_KEY[record.era]] = record.ttlMs;
  task[POLL_KEY[record.era]] = record.pollIntervalMs;
  if (record.statusMessage === undefined) delete task.statusMessage;
  else task.statusMessage = record.statusMessage;
}

/** A task object built from the record alone (tasks/list items; answers for early polls). */
export function taskFromRecord(record: TaskRecord): JsonObject {
  const task: JsonObject = {
    taskId: record.handle,
    status: record.status,
    createdAt: record.createdAtIso,
    lastUpdatedAt: record.lastUpdatedAtIso,
    [TTL_KEY[record.era]]: record.ttlMs,
    [POLL_KEY[record.era]]: record.pollIntervalMs,
  };
  if (record.statusMessage !== undefined) task.statusMessage = record.statusMessage;
  return task;
}

// C0 and C1 controls, DEL, and the bidirectional and zero-width format characters that can
// hide or reorder text shown to a person or a model, and lone surrogates (half a character,
// which no UTF-8 writer can encode: a store or a client would turn it into U+FFFD or fail).
// With the u flag the surrogate range matches only unpaired halves. Line breaks and tabs
// become spaces: a status message is one line.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE_CHARACTERS = /[\u0000-\u0008\u000E-\u001F\u007F-\u009F\u200B-\u200F\u202A-\u202E\u2060-\u2069\uFEFF\uD800-\uDFFF]/gu;
const LINE_BREAKS = /[\t\n\v\f\r\u2028\u2029]+/g;

/**
 * The status message a task record keeps: every writer of a record (creation, a poll, a
 * notification) passes the backend's text through here, so every answer built from the record
 * (tasks/list, early polls, relayed objects) shows the same safe text.
 */
export function recordedStatusMessage(message: string | undefined, maxLength: number): string | undefined {
  return message === undefined ? undefined : sanitizeStatusMessage(message, maxLength);
}

export function sanitizeStatusMessage(message: string, maxLength: number): string {
  const cleaned = message.replace(LINE_BREAKS, ' ').replace(UNSAFE_CHARACTERS, '');
  // Cut on code points so a surrogate pair is never split.
  const points = Array.from(cleaned);
  return points.length > maxLength ? points.slice(0, maxLength).join('') : cleaned;
}

function isNonNegative(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
