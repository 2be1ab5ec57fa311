/**
 * A backend's tasks/get answer as the owner is shown it and as the record learns it: the same
 * for a client's forwarded poll (src/tasks/task-responses.ts), for the polls the gateway makes
 * itself for a listened-to task (src/push/), for a bridged task's backend (src/bridge/) and for
 * an operator's look (src/console/).
 */
import type { TasksConfig } from '../config/sections/tasks.js';
import type { JsonObject } from '../mcp/json.js';
import { recordedStatusMessage } from './status-message.js';
import type { TaskPatch, TaskRecord } from './task-record.js';
import { presentDetailedTask, wireOf, type TaskFields } from './task-wire.js';
import { changedTtl } from './ttl-policy.js';

/** The record follows what the backend reports; lifetime and interval stay within policy. */
export function nextState(policy: TasksConfig, record: TaskRecord, fields: TaskFields): TaskPatch {
  const nextTtl = changedTtl(policy, record, fields.ttlMs);
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
 * Rewrites `result` (a tasks/get result, or the params of a backend's status notification) in
 * place into what the owner is shown: the handle (in place of the backend id wherever the
 * backend wrote it), the gateway's lifetime and interval, and the shapes the record's era
 * requires. Undefined when it is not a task at all.
 */
export function presentPolledAnswer(policy: TasksConfig, record: TaskRecord, result: JsonObject): { patch: TaskPatch; updated: TaskRecord } | undefined {
  const wire = wireOf(record.era);
  const fields = wire.readTask(result);
  if (!fields) return undefined;
  const patch = nextState(policy, record, fields);
  const updated = { ...record, ...patch };
  presentDetailedTask(result, updated);
  // The standard result shape of tasks/get, whatever the backend put there.
  wire.markComplete(result);
  return { patch, updated };
}
