/**
 * A 2026-07-28 client that declared the tasks extension calls a tool its 2025-11-25-only
 * backend offers as a task: the gateway asks for one (`params.task`, the policy's TTL) in the
 * principal's session, and a CreateTaskResult becomes a 2026 one under a handle of the
 * gateway's: a `bridged` record in the client's era, with the backend's protocol version and
 * the session the task lives in. A backend that answers plainly instead is relayed as the plain
 * result it is (a 2026 server decides per call). Creation is counted before the backend works.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Instance } from '../routing/balancer.js';
import { enforcedInterval } from '../task-model/poll-rule.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import { mintHandle } from '../tasks/handle.js';
import { countCreation, ownerOf } from '../tasks/task-context.js';
import { readTask, recordedStatusMessage, taskFromRecord, wholeTtlMs } from '../tasks/task-shapes.js';
import type { BridgeContext } from './bridge-context.js';
import { upstreamFailure } from './legacy-creation.js';
import { callInSession, type LegacySession, type LegacySessions } from './legacy-sessions.js';
import type { RpcAnswer } from './rpc-exchange.js';

export async function createBridgedModernTask(
  ctx: BridgeContext,
  sessions: LegacySessions,
  deps: StageDeps,
  request: TaskRequest,
  message: JsonRpcRequest,
  params: JsonObject,
  tool: string,
  instance: Instance,
): Promise<LocalAnswer> {
  request.toolName = tool.slice(0, 128);
  request.declaresTasks = true;
  request.instance = instance;
  await countCreation(deps, ownerOf(request));
  const ttlMs = wholeTtlMs(Math.min(deps.policy.tools[tool]?.maxTtl ?? Infinity, deps.policy.ttl.max, deps.policy.ttl.default));
  let answer: RpcAnswer;
  let session: LegacySession;
  try {
    ({ answer, session } = await sessions.call(request, instance, 'tools/call', { ...params, task: { ttl: ttlMs } }));
  } catch (error) {
    ctx.count(request, 'tools/call', 'error');
    throw upstreamFailure(error);
  }
  const response = answer.response;
  if (!response) {
    ctx.count(request, 'tools/call', 'error');
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: `the backend answered HTTP ${answer.status} without an answer to the call` });
  }
  if (response.error) {
    ctx.count(request, 'tools/call', 'error');
    return { status: 200, body: { jsonrpc: '2.0', id: message.id, error: response.error } };
  }
  const result = isObject(response.result) ? response.result : {};
  if (!isObject(result.task)) {
    ctx.count(request, 'tools/call', 'ok');
    return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: { ...result, resultType: 'complete' } } };
  }
  const fields = readTask(result.task, 'legacy');
  if (!fields) {
    ctx.count(request, 'tools/call', 'error');
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'malformed task creation result' });
  }
  const record = newRecord(deps, request, tool, instance, session, fields.taskId, fields.ttlMs === null || fields.ttlMs === undefined ? ttlMs : Math.min(fields.ttlMs, ttlMs), fields.pollIntervalMs);
  const withStatus: TaskRecord = {
    ...record,
    status: fields.status === 'failed' ? 'working' : fields.status,
    statusMessage: recordedStatusMessage(fields.statusMessage, deps.policy.statusMessageMaxLength, record),
  };
  let created;
  try {
    created = await deps.store.createTask(withStatus, deps.policy.maxLivePerPrincipal);
  } catch (error) {
    cancelRefused(ctx, request, withStatus, instance);
    throw error;
  }
  if (created !== 'created') {
    cancelRefused(ctx, request, withStatus, instance);
    request.taskOutcome = 'throttled';
    throw created === 'owner-limit'
      ? new GatewayError('TG_ERR_TOO_MANY_TASKS', { data: { maxLiveTasks: deps.policy.maxLivePerPrincipal } })
      : new GatewayError('TG_ERR_STORE_UNAVAILABLE', { detail: 'task store is full' });
  }
  request.createdTask = withStatus;
  deps.observer.created(withStatus);
  ctx.count(request, 'tools/call', 'ok');
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: { resultType: 'task', ...taskFromRecord(withStatus) } } };
}

function newRecord(deps: StageDeps, request: TaskRequest, tool: string, instance: Instance, session: LegacySession, upstreamTaskId: string, ttlMs: number, pollIntervalMs: number | undefined): TaskRecord {
  const now = Date.now();
  const iso = new Date(now).toISOString();
  return {
    handle: mintHandle(),
    kind: 'bridged',
    owner: ownerOf(request),
    upstream: request.route.pool.upstream,
    instance: instance.url,
    upstreamPath: request.route.upstreamPath,
    upstreamTaskId,
    era: 'modern',
    tool,
    // The backend binds the task to this session (SDK 1.x): every call about it goes there.
    upstreamSession: session.id,
    protocolVersion: session.version,
    createdAt: now,
    createdAtIso: iso,
    lastUpdatedAtIso: iso,
    ttlMs: wholeTtlMs(ttlMs),
    expiresAt: now + wholeTtlMs(ttlMs),
    pollIntervalMs: enforcedInterval(pollIntervalMs, deps.policy.poll.floor, deps.policy.poll.default),
    status: 'working',
    readOnce: deps.policy.tools[tool]?.readOnce ?? false,
    ...(request.trace ? { traceparent: request.trace.taskLink() } : undefined),
  };
}

function cancelRefused(ctx: BridgeContext, request: TaskRequest, record: TaskRecord, instance: Instance): void {
  callInSession(request, instance, { id: record.upstreamSession, version: record.protocolVersion ?? '2025-11-25' }, 'tasks/cancel', { taskId: record.upstreamTaskId }).catch((error: unknown) => {
    ctx.logger.warn({ err: error, upstream: record.upstream }, 'could not cancel a refused bridged task upstream');
  });
}
