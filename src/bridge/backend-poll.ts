/**
 * What a bridged task's 2026-07-28 backend says of it now (its tasks/get, a DetailedTask), and
 * the record brought up to date from it in the client's legacy terms. The two eras differ
 * in one status rule (PROTOCOL-BRIEF §8.10): a tool result with `isError: true` is a modern
 * `completed` task and a legacy `failed` one. A backend that no longer knows the task (it
 * restarted, or its own TTL ran out first) ends it `failed`, saying so.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import { isTerminalStatus, type TaskPatch, type TaskRecord } from '../task-model/task-record.js';
import type { StageDeps } from '../tasks/extension-points.js';
import { nextState } from '../task-model/poll-answer.js';
import { MODERN_WIRE, type TaskFields } from '../task-model/task-wire.js';
import type { BridgeContext } from './bridge-context.js';
import { upstreamFailure } from '../upstream/upstream-failure.js';
import { callModern, taskCall } from './modern-call.js';

export const LOST_MESSAGE = 'the backend no longer knows this task';

export interface BackendView {
  /** The backend's DetailedTask (result, error, inputRequests inline); undefined when it lost the task. */
  readonly detailed?: JsonObject;
  readonly patch: TaskPatch;
  readonly updated: TaskRecord;
}

/** Asks the backend; throws the catalogue's 502/503/504 when it cannot be asked. */
export async function pollBackend(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, record: TaskRecord): Promise<BackendView> {
  const instance = request.route.pool.findInstance(record.instance);
  if (!instance) throw new GatewayError('TG_ERR_UPSTREAM_UNAVAILABLE', { detail: 'the instance holding the task is gone' });
  let answer;
  try {
    answer = await callModern(request, instance, taskCall(record, 'tasks/get'), request.abort);
  } catch (error) {
    ctx.count(request, 'tasks/get', 'error');
    throw upstreamFailure(error);
  }
  const response = answer.response;
  if (response?.error?.code === -32602) return lost(deps, record);
  const result = response?.result;
  const fields = MODERN_WIRE.readTask(result);
  if (!isObject(result) || !fields) {
    ctx.count(request, 'tasks/get', 'error');
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: `the backend's tasks/get answer (HTTP ${answer.status}) is not a task` });
  }
  const legacy: TaskFields = { ...fields, status: legacyStatusOf(result, fields) };
  const patch = nextState(deps.policy, record, legacy);
  return { detailed: result, patch, updated: { ...record, ...patch } };
}

/** Modern completed with an isError result is legacy failed; every other status is the same word. */
function legacyStatusOf(detailed: JsonObject, fields: TaskFields): TaskFields['status'] {
  return fields.status === 'completed' && isObject(detailed.result) && detailed.result.isError === true ? 'failed' : fields.status;
}

function lost(deps: StageDeps, record: TaskRecord): BackendView {
  if (isTerminalStatus(record.status)) return { patch: {}, updated: record };
  const patch: TaskPatch = { status: 'failed', statusMessage: LOST_MESSAGE.slice(0, deps.policy.statusMessageMaxLength), lastUpdatedAtIso: new Date().toISOString() };
  return { patch, updated: { ...record, ...patch } };
}

/** Writes what a poll learnt: the record and (for tasks/get) the snapshot early polls get. */
export async function learn(deps: StageDeps, record: TaskRecord, view: BackendView, snapshot?: { text: string; tag?: string }): Promise<void> {
  const { patch, updated } = view;
  if (snapshot) await deps.store.recordPoll(record, patch, snapshot.text, snapshot.tag);
  else if (Object.keys(patch).length > 0) await deps.store.updateTask(record.handle, patch);
  if (updated.status === record.status) return;
  if (!snapshot) await deps.store.invalidatePoll(record.handle);
  deps.observer.statusChanged(record, record.status, updated.status);
  await deps.store.events.publish(record.handle).catch(() => undefined);
}
