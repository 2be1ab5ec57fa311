/**
 * A 2025-11-25 client asks for a task (`params.task`) of a backend that serves only the
 * 2026-07-28 tasks extension (DESIGN.md §12): the call goes to the backend as a modern tools/call
 * declaring the extension, on the instance of the client's session, and
 *   - a CreateTaskResult becomes a legacy one, under a handle of the gateway's (a `bridged` record:
 *     the client's era, the backend's protocol version);
 *   - a plain answer (the server decides, and may answer at once) still gives the client the
 *     task it asked for: a task the gateway holds, already ended, whose tasks/result is that
 *     answer (a `provided`-kind record with its outcome, served by the gateway-run task model);
 *   - an MRTR input_required, which a legacy client cannot answer by retrying, is refused.
 * Creation is counted before the backend works, as for any legacy task request.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import { MODERN_VERSION } from '../mcp/era.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Instance } from '../routing/balancer.js';
import { buildTaskRecord, type NewTask } from '../task-model/record-builder.js';
import type { ProvidedOutcome } from '../task-model/provided-state.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import { mintHandle } from '../tasks/handle.js';
import { countCreation, creationRefusal, ownerOf, taskOrigin } from '../tasks/task-context.js';
import { LEGACY_WIRE, MODERN_WIRE, taskFromRecord } from '../task-model/task-wire.js';
import { advertisedTtl, ttlWithin } from '../task-model/ttl-policy.js';
import { upstreamFailure } from '../upstream/upstream-failure.js';
import type { BridgeContext } from './bridge-context.js';
import { callModern, taskCall } from './modern-call.js';
import type { RpcAnswer } from './rpc-exchange.js';

export async function createBridgedLegacyTask(
  ctx: BridgeContext,
  deps: StageDeps,
  request: TaskRequest,
  message: JsonRpcRequest,
  params: JsonObject,
  tool: string,
  instance: Instance,
): Promise<LocalAnswer> {
  request.toolName = tool.slice(0, 128);
  const owner = ownerOf(request);
  await countCreation(deps, owner);
  const wantedTtl = ttlWithin(deps.policy, tool, isObject(params.task) ? params.task.ttl : undefined);
  const { task: _task, ...plain } = params;
  // The modern era has no progress on tasks (PROTOCOL-BRIEF §9 A19): the client's token is not passed on.
  if (isObject(plain._meta)) {
    const { progressToken: _token, ...meta } = plain._meta;
    plain._meta = meta;
  }
  let answer: RpcAnswer;
  try {
    answer = await callModern(request, instance, { method: 'tools/call', params: plain, name: tool }, request.abort);
  } catch (error) {
    ctx.count(request, 'tools/call', 'error');
    throw upstreamFailure(error);
  }
  const response = answer.response;
  if (!response) {
    ctx.count(request, 'tools/call', 'error');
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: `the backend answered HTTP ${answer.status} without an answer to the call` });
  }
  const result = isObject(response.result) ? response.result : undefined;
  if (result?.resultType === 'task') return registerBridgedTask(ctx, deps, request, message, result, tool, instance, wantedTtl);
  if (result?.resultType === 'input_required') {
    ctx.count(request, 'tools/call', 'error');
    throw new GatewayError('TG_ERR_NOT_BRIDGED', {
      data: { reason: 'the backend asks for input before it makes a task (2026-07-28 MRTR); a 2025-11-25 task cannot carry that' },
    });
  }
  // A plain answer: the task the client asked for, ended already, holding it.
  const outcome: ProvidedOutcome = response.error ? { error: response.error } : { result: withoutResultType(result ?? {}) };
  const failed = 'error' in outcome || outcome.result.isError === true;
  const record = newRecord(deps, request, tool, instance, wantedTtl, { kind: 'provided', status: failed ? 'failed' : 'completed' });
  const created = await deps.store.createProvidedTask(record, { instance: instance.url, round: 0, outcome }, deps.policy.maxLivePerPrincipal);
  if (created !== 'created') throw creationRefusal(deps, created);
  announce(ctx, deps, request, record);
  ctx.count(request, 'tools/call', 'ok');
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: LEGACY_WIRE.creationResult(taskFromRecord(record)) } };
}

async function registerBridgedTask(
  ctx: BridgeContext,
  deps: StageDeps,
  request: TaskRequest,
  message: JsonRpcRequest,
  result: JsonObject,
  tool: string,
  instance: Instance,
  wantedTtl: number,
): Promise<LocalAnswer> {
  // The backend's own creation result, in its (modern) wire.
  const fields = MODERN_WIRE.readTask(result);
  if (!fields) {
    ctx.count(request, 'tools/call', 'error');
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'malformed task creation result' });
  }
  // The backend keeps the task for its ttlMs; the gateway promises no more than that, nor than asked.
  const ttlMs = advertisedTtl(fields.ttlMs, wantedTtl);
  const record = newRecord(deps, request, tool, instance, ttlMs, {
    kind: 'bridged',
    status: fields.status,
    upstreamTaskId: fields.taskId,
    pollIntervalMs: fields.pollIntervalMs,
    statusMessage: fields.statusMessage,
  });
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
  announce(ctx, deps, request, record);
  ctx.count(request, 'tools/call', 'ok');
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: LEGACY_WIRE.creationResult(taskFromRecord(record)) } };
}

function newRecord(
  deps: StageDeps,
  request: TaskRequest,
  tool: string,
  instance: Instance,
  ttlMs: number,
  what: Pick<NewTask, 'status' | 'upstreamTaskId' | 'pollIntervalMs' | 'statusMessage'> & { kind: 'bridged' | 'provided' },
): TaskRecord {
  return buildTaskRecord(
    {
      handle: mintHandle(),
      ...what,
      ...taskOrigin(request, instance.url),
      // The client's era: what its handle answers in, and what tasks/list shows it in.
      era: 'legacy',
      tool,
      // The backend's: what the gateway speaks to it (src/upstream/task-calls.ts frames by it).
      protocolVersion: MODERN_VERSION,
      ttlMs,
    },
    deps.policy,
  );
}

function announce(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, record: TaskRecord): void {
  request.createdTask = record;
  deps.observer.created(record);
  ctx.logger.debug({ upstream: record.upstream, tool: record.tool, kind: record.kind }, 'a 2025-11-25 task bridged to a 2026-07-28 backend');
}

/** The backend made a task no client can reach: cancelled there, best effort. */
function cancelRefused(ctx: BridgeContext, request: TaskRequest, record: TaskRecord, instance: Instance): void {
  callModern(request, instance, taskCall(record, 'tasks/cancel')).catch((error: unknown) => {
    ctx.logger.warn({ err: error, upstream: record.upstream }, 'could not cancel a refused bridged task upstream');
  });
}

/** A modern result as a legacy client gets it: without the modern discriminator. */
export function withoutResultType(result: JsonObject): JsonObject {
  const { resultType: _type, ...rest } = result;
  return rest;
}
