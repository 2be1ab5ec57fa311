/**
 * A backend's tasks/get answer as the owner is shown it and as the record learns it: the same
 * for a client's forwarded poll (task-responses.ts) and for the polls the gateway makes itself
 * for a listened-to task (src/push/).
 */
import type { TasksConfig } from '../config/sections/tasks.js';
import type { TaskPatch, TaskRecord } from '../task-model/task-record.js';
import { presentDetailedTask, readTask, recordedStatusMessage, type JsonObject, type TaskFields } from './task-shapes.js';

/** The record follows what the backend reports; lifetime and interval stay within policy. */
export function nextState(policy: TasksConfig, record: TaskRecord, fields: TaskFields): TaskPatch {
  const cap = Math.min(policy.tools[record.tool]?.maxTtl ?? Infinity, policy.ttl.max);
  // The TTL may change during a task (2026-07-28); it never grows past the cap, and never
  // shrinks below what the client was already promised.
  const nextTtl = fields.ttlMs === undefined ? record.ttlMs : Math.max(record.ttlMs, Math.min(fields.ttlMs ?? cap, cap));
  return {
    status: fields.status,
    statusMessage: recordedStatusMessage(fields.statusMessage, policy.statusMessageMaxLength, record),
    lastUpdatedAtIso: fields.lastUpdatedAt ?? record.lastUpdatedAtIso,
    ttlMs: nextTtl,
    expiresAt: record.createdAt + nextTtl,
    pollIntervalMs: fields.pollIntervalMs === undefined ? record.pollIntervalMs : Math.max(fields.pollIntervalMs, policy.poll.floor),
  };
}

/**
 * Rewrites `result` (a tasks/get result, or the params of a backend's notifications/tasks) in
 * place into what the owner is shown: the handle (in place of the backend id wherever the
 * backend wrote it), the gateway's lifetime and interval, and (2026) the shapes ext-tasks
 * requires. Undefined when it is not a task at all.
 */
export function presentPolledAnswer(policy: TasksConfig, record: TaskRecord, result: JsonObject): { patch: TaskPatch; updated: TaskRecord } | undefined {
  const fields = readTask(result, record.era);
  if (!fields) return undefined;
  const patch = nextState(policy, record, fields);
  const updated = { ...record, ...patch };
  presentDetailedTask(result, updated);
  // The standard result shape of tasks/get, whatever the backend put there.
  if (record.era === 'modern') result.resultType = 'complete';
  return { patch, updated };
}
