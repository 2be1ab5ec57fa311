/**
 * tasks/get and tasks/cancel of a bridged task, the 2025-11-25 way, for a task its 2026-07-28
 * backend holds. The tasks stage has checked the owner and governed the poll already (an early
 * poll gets the snapshot written here and never reaches the backend).
 *   tasks/get     the backend's tasks/get, as a legacy Task (handle, capped ttl, the interval told)
 *   tasks/cancel  refused with -32602 once the task ended (a MUST in the legacy era); otherwise the
 *                 backend's tasks/cancel (an ack), and the task is `cancelled` before the answer
 *                 and stays so whatever the backend does next (another legacy MUST)
 * A task that ended is answered from the record: the backend is asked nothing more about it.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import type { LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import { taskFromRecord } from '../task-model/task-wire.js';
import { learn, pollBackend } from './backend-poll.js';
import type { BridgeContext } from './bridge-context.js';
import { upstreamFailure } from '../upstream/upstream-failure.js';
import { callModern, taskCall } from './modern-call.js';

const CANCELLED_MESSAGE = 'The task was cancelled by request.';

export async function answerLegacyGet(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
  let current = record;
  if (!isTerminalStatus(record.status)) {
    const view = await pollBackend(ctx, deps, request, record);
    const text = JSON.stringify(taskFromRecord(view.updated));
    await learn(deps, record, view, { text, tag: request.snapshotTag });
    current = view.updated;
    ctx.count(request, 'tasks/get', 'ok');
  }
  request.statusSeen = current.status;
  const text = JSON.stringify(taskFromRecord(current));
  return { status: 200, body: `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${text}}` };
}

export async function answerLegacyCancel(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
  let current = record;
  if (!isTerminalStatus(current.status)) {
    // The record may lag: a task that ended meanwhile is refused like one known to have ended.
    const view = await pollBackend(ctx, deps, request, record);
    await learn(deps, record, view);
    current = view.updated;
  }
  if (isTerminalStatus(current.status)) {
    request.statusSeen = current.status;
    throw new GatewayError('TG_ERR_TASK_TERMINAL', { detail: `'${current.status}'` });
  }
  const instance = request.route.pool.findInstance(record.instance);
  if (!instance) throw new GatewayError('TG_ERR_UPSTREAM_UNAVAILABLE', { detail: 'the instance holding the task is gone' });
  try {
    const answer = await callModern(request, instance, taskCall(record, 'tasks/cancel'), request.abort);
    if (!answer.response?.result) throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: `the backend did not acknowledge the cancel (HTTP ${answer.status})` });
  } catch (error) {
    ctx.count(request, 'tasks/cancel', 'error');
    throw upstreamFailure(error);
  }
  const patch = { status: 'cancelled' as const, statusMessage: CANCELLED_MESSAGE.slice(0, deps.policy.statusMessageMaxLength), lastUpdatedAtIso: new Date().toISOString() };
  const cancelled: TaskRecord = { ...current, ...patch };
  await learn(deps, current, { patch, updated: cancelled });
  ctx.count(request, 'tasks/cancel', 'ok');
  request.statusSeen = 'cancelled';
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: taskFromRecord(cancelled) } };
}
