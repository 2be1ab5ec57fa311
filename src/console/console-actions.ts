/**
 * What an operator can do (docs/console.md, "Actions"), each with a reason, audited with who
 * did it and counted in taskgate_console_actions_total:
 *
 * - cancel a task, the way its owner's tasks/cancel would go: a backend's task gets the
 *   gateway's own tasks/cancel (the call an expiry makes, src/upstream/task-calls.ts) and the
 *   owner's poll snapshot is dropped, so its next tasks/get reaches the backend and hears
 *   `cancelled`; a task the gateway runs itself is cancelled in the store and its call stopped
 *   on whichever replica holds it (src/provided/);
 * - suspend a principal's task operations until a time, or end a suspension (the limits stage
 *   answers its tasks/* 429 meanwhile, as for the enumeration detector's suspension).
 */
import { GatewayError } from '../errors.js';
import { rpcAnswerOf } from '../mcp/event-stream.js';
import type { AuditLog } from '../observability/audit.js';
import type { HandleHasher } from '../observability/handle-hash.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import { nextState } from '../task-model/poll-answer.js';
import { isObject } from '../mcp/json.js';
import { wireOf } from '../task-model/task-wire.js';
import { sanitizeStatusMessage } from '../task-model/status-message.js';
import type { TaskKindHandler } from '../tasks/extension-points.js';
import { taskKindHandler, type TaskDeps } from '../tasks/task-context.js';
import type { Operator } from './operator-auth.js';

export interface ActionDeps {
  /** The task dependencies of the policy in force. */
  readonly tasks: TaskDeps;
  readonly audit: AuditLog;
  readonly metrics: GatewayMetrics;
  readonly hashHandle: HandleHasher;
}

/** Who asked, why, and the admin request that carried it. */
export interface ActionRequest {
  readonly operator: Operator;
  readonly reason: string;
  readonly requestId: string;
  readonly source: string;
}

export interface CancelOutcome {
  /** The status the gateway knows after the cancel: a backend's task may settle later. */
  readonly status: TaskRecord['status'];
  /** The backend acknowledged the cancel (backend tasks) or the store holds it (gateway-run). */
  readonly cancelled: true;
}

export async function cancelTask(deps: ActionDeps, record: TaskRecord, request: ActionRequest): Promise<CancelOutcome> {
  const audit = (allowed: boolean, status?: string) =>
    deps.audit.record({
      event: 'operator_cancel',
      allowed,
      handle: record.handle,
      handleHash: deps.hashHandle(record.handle),
      tool: record.tool,
      upstream: record.upstream,
      instance: record.instance,
      status,
      ...actor(request),
    });
  try {
    if (isTerminalStatus(record.status)) throw new GatewayError('TG_ERR_CONSOLE_CONFLICT', { detail: `the task has already ended (${record.status})` });
    const handler = taskKindHandler(deps.tasks, record);
    const status = handler ? await cancelByKind(deps, handler, record) : await cancelAtBackend(deps, record);
    audit(true, status);
    deps.metrics.consoleActions.inc({ action: 'cancel', outcome: 'done' });
    return { status, cancelled: true };
  } catch (error) {
    audit(false);
    deps.metrics.consoleActions.inc({ action: 'cancel', outcome: outcomeOf(error) });
    throw error;
  }
}

async function cancelByKind(deps: ActionDeps, handler: TaskKindHandler, record: TaskRecord): Promise<TaskRecord['status']> {
  // The same cancel as the owner's tasks/cancel of such a task (a gateway-run one: src/provided/).
  const moved = await handler.cancel(deps.tasks, record);
  if (!moved) throw new GatewayError('TG_ERR_CONSOLE_CONFLICT', { detail: 'the task has already ended' });
  return 'cancelled';
}

async function cancelAtBackend(deps: ActionDeps, record: TaskRecord): Promise<TaskRecord['status']> {
  const { tasks } = deps;
  let answer;
  try {
    answer = await tasks.callUpstream(record, 'tasks/cancel', { reason: 'operator', readAnswer: true });
  } catch (error) {
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'the backend could not be reached for the cancel', cause: error });
  }
  const message = rpcAnswerOf(answer.body, answer.contentType);
  if (isObject(message?.error)) {
    const { code, message: text } = message.error;
    throw new GatewayError('TG_ERR_CONSOLE_CONFLICT', {
      detail: 'the backend refused the cancel',
      data: { backendError: { code: typeof code === 'number' ? code : null, message: typeof text === 'string' ? sanitizeStatusMessage(text, 256) : '' } },
    });
  }
  if (answer.status >= 300 || !message || !('result' in message)) {
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: `the backend answered the cancel with HTTP ${answer.status} and no JSON-RPC result` });
  }
  // Whatever early polls would be served is stale now: the owner's next tasks/get goes to the
  // backend and hears how the task ended.
  await tasks.store.invalidatePoll(record.handle);
  // A 2025 backend answers with the task: the record learns its status now, as it does from
  // the owner's own 2025 tasks/cancel (task-responses.ts).
  const fields = wireOf(record.era).readTask(message.result);
  if (!fields) {
    tasks.store.events.publish(record.handle).catch(() => undefined);
    return record.status;
  }
  const patch = nextState(tasks.policy, record, fields);
  await tasks.store.updateTask(record.handle, patch);
  tasks.observer.statusChanged(record, record.status, fields.status);
  tasks.store.events.publish(record.handle).catch(() => undefined);
  return fields.status;
}

export async function suspendPrincipal(deps: ActionDeps, owner: string, durationMs: number, request: ActionRequest): Promise<{ until: number }> {
  const now = Date.now();
  const until = now + durationMs;
  try {
    await deps.tasks.store.limits.suspend(owner, until, now);
  } catch (error) {
    deps.audit.record({ event: 'operator_suspend', allowed: false, owner, durationMs, ...actor(request) });
    deps.metrics.consoleActions.inc({ action: 'suspend', outcome: 'failed' });
    throw error;
  }
  deps.audit.record({ event: 'operator_suspend', allowed: true, owner, durationMs, ...actor(request) });
  deps.metrics.consoleActions.inc({ action: 'suspend', outcome: 'done' });
  return { until };
}

export async function unsuspendPrincipal(deps: ActionDeps, owner: string, request: ActionRequest): Promise<{ wasSuspended: boolean }> {
  let wasSuspended: boolean;
  try {
    wasSuspended = await deps.tasks.store.limits.unsuspend(owner, Date.now());
  } catch (error) {
    deps.audit.record({ event: 'operator_unsuspend', allowed: false, owner, ...actor(request) });
    deps.metrics.consoleActions.inc({ action: 'unsuspend', outcome: 'failed' });
    throw error;
  }
  deps.audit.record({ event: 'operator_unsuspend', allowed: true, owner, reason: wasSuspended ? undefined : 'not_suspended', ...actor(request) });
  deps.metrics.consoleActions.inc({ action: 'unsuspend', outcome: wasSuspended ? 'done' : 'conflict' });
  return { wasSuspended };
}

function actor(request: ActionRequest) {
  const { name, role, via, issuer } = request.operator;
  return {
    operator: { name, role, via, ...(issuer === undefined ? {} : { issuer }) },
    operatorReason: request.reason,
    requestId: request.requestId,
    source: request.source,
  };
}

function outcomeOf(error: unknown): string {
  if (error instanceof GatewayError && error.code === 'TG_ERR_CONSOLE_CONFLICT') return 'conflict';
  if (error instanceof GatewayError && error.code === 'TG_ERR_CONSOLE_NOT_FOUND') return 'not_found';
  return 'failed';
}

