/**
 * A 2026-07-28 client that declared the tasks extension calls a tool its 2025-11-25-only
 * backend offers as a task: the gateway asks for one (`params.task`, the policy's TTL) in the
 * principal's session, and a CreateTaskResult becomes a modern one under a handle of the
 * gateway's: a `bridged` record in the client's era, with the backend's protocol version and
 * the session the task lives in. A backend that answers plainly instead is relayed as the plain
 * result it is (a modern server decides per call). Creation is counted before the backend works.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Instance } from '../routing/balancer.js';
import { buildTaskRecord } from '../task-model/record-builder.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import { mintHandle } from '../tasks/handle.js';
import { countCreation, creationRefusal, ownerOf, taskOrigin } from '../tasks/task-context.js';
import { LEGACY_WIRE, MODERN_WIRE, taskFromRecord } from '../task-model/task-wire.js';
import { advertisedTtl, ttlWithin } from '../task-model/ttl-policy.js';
import type { BridgeContext } from './bridge-context.js';
import { upstreamFailure } from '../upstream/upstream-failure.js';
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
  const ttlMs = ttlWithin(deps.policy, tool);
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
  // The backend's own creation result, in its (legacy) wire.
  const fields = LEGACY_WIRE.readTask(result.task);
  if (!fields) {
    ctx.count(request, 'tools/call', 'error');
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'malformed task creation result' });
  }
  const record = buildTaskRecord(
    {
      handle: mintHandle(),
      kind: 'bridged',
      ...taskOrigin(request, instance.url),
      upstreamTaskId: fields.taskId,
      era: 'modern',
      tool,
      // The backend binds the task to this session (SDK 1.x): every call about it goes there.
      upstreamSession: session.id,
      protocolVersion: session.version,
      ttlMs: advertisedTtl(fields.ttlMs, ttlMs),
      pollIntervalMs: fields.pollIntervalMs,
      // A legacy `failed` may yet be a modern `completed` (a tool error): the next poll tells.
      status: fields.status === 'failed' ? 'working' : fields.status,
      statusMessage: fields.statusMessage,
    },
    deps.policy,
  );
  let created;
  try {
    created = await deps.store.createTask(record, deps.policy.maxLivePerPrincipal);
  } catch (error) {
    cancelRefused(ctx, request, record, instance);
    throw error;
  }
  if (created !== 'created') {
    cancelRefused(ctx, request, record, instance);
    request.taskOutcome = 'throttled';
    throw creationRefusal(deps, created);
  }
  request.createdTask = record;
  deps.observer.created(record);
  ctx.count(request, 'tools/call', 'ok');
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: MODERN_WIRE.creationResult(taskFromRecord(record)) } };
}

function cancelRefused(ctx: BridgeContext, request: TaskRequest, record: TaskRecord, instance: Instance): void {
  callInSession(request, instance, { id: record.upstreamSession, version: record.protocolVersion ?? '2025-11-25' }, 'tasks/cancel', { taskId: record.upstreamTaskId }).catch((error: unknown) => {
    ctx.logger.warn({ err: error, upstream: record.upstream }, 'could not cancel a refused bridged task upstream');
  });
}
