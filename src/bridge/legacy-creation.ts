/**
 * A 2025-11-25 client asks for a task (`params.task`) of a backend that serves only the
 * 2026-07-28 tasks extension (DESIGN.md §12): the call goes to the backend as a 2026 tools/call
 * declaring the extension, on the instance of the client's session, and
 *   - a CreateTaskResult becomes a 2025 one, under a handle of the gateway's (a `bridged` record:
 *     the client's era, the backend's protocol version);
 *   - a plain answer (the server decides, and may answer at once) still gives the client the
 *     task it asked for: a task the gateway holds, already ended, whose tasks/result is that
 *     answer (a `provided`-kind record with its outcome, served by the gateway-run task model);
 *   - an MRTR input_required, which a 2025 client cannot answer by retrying, is refused.
 * Creation is counted before the backend works, as for any 2025 task request.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError, toWireError } from '../errors.js';
import { MODERN_VERSION } from '../mcp/era.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Instance } from '../routing/balancer.js';
import { enforcedInterval } from '../task-model/poll-rule.js';
import type { ProvidedOutcome } from '../task-model/provided-state.js';
import type { TaskRecord, TaskStatus } from '../task-model/task-record.js';
import type { LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import { mintHandle } from '../tasks/handle.js';
import { countCreation, ownerOf } from '../tasks/task-context.js';
import { readTask, recordedStatusMessage, taskFromRecord, wholeTtlMs } from '../tasks/task-shapes.js';
import { classifyUpstreamError, upstreamFailureCode } from '../upstream/upstream-failure.js';
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
  const cap = Math.min(deps.policy.tools[tool]?.maxTtl ?? Infinity, deps.policy.ttl.max);
  const requested = isObject(params.task) ? params.task.ttl : undefined;
  const wantedTtl = Math.min(typeof requested === 'number' && Number.isFinite(requested) && requested >= 0 ? requested : deps.policy.ttl.default, cap);
  const { task: _task, ...plain } = params;
  // 2026 has no progress on tasks (PROTOCOL-BRIEF §9 A19): the client's token is not passed on.
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
  const created = await deps.store.createProvidedTask({ ...record, upstreamTaskId: record.handle }, { instance: instance.url, round: 0, outcome }, deps.policy.maxLivePerPrincipal);
  if (created !== 'created') throw refusal(deps, created);
  announce(ctx, deps, request, record);
  ctx.count(request, 'tools/call', 'ok');
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: { task: taskFromRecord(record) } } };
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
  const fields = readTask(result, 'modern');
  if (!fields) {
    ctx.count(request, 'tools/call', 'error');
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'malformed task creation result' });
  }
  // The backend keeps the task for its ttlMs; the gateway promises no more than that, nor than asked.
  const ttlMs = fields.ttlMs === null || fields.ttlMs === undefined ? wantedTtl : Math.min(fields.ttlMs, wantedTtl);
  const record = newRecord(deps, request, tool, instance, ttlMs, { kind: 'bridged', status: fields.status, upstreamTaskId: fields.taskId, pollIntervalMs: fields.pollIntervalMs });
  const withMessage: TaskRecord = { ...record, statusMessage: recordedStatusMessage(fields.statusMessage, deps.policy.statusMessageMaxLength, record) };
  let created;
  try {
    created = await deps.store.createTask(withMessage, deps.policy.maxLivePerPrincipal);
  } catch (error) {
    cancelRefused(ctx, request, withMessage, instance);
    throw error;
  }
  if (created !== 'created') {
    cancelRefused(ctx, request, withMessage, instance);
    request.taskOutcome = 'throttled';
    throw refusal(deps, created);
  }
  announce(ctx, deps, request, withMessage);
  ctx.count(request, 'tools/call', 'ok');
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: { task: taskFromRecord(withMessage) } } };
}

function newRecord(
  deps: StageDeps,
  request: TaskRequest,
  tool: string,
  instance: Instance,
  ttlMs: number,
  what: { kind: 'bridged' | 'provided'; status: TaskStatus; upstreamTaskId?: string; pollIntervalMs?: number },
): TaskRecord {
  const now = Date.now();
  const iso = new Date(now).toISOString();
  const handle = mintHandle();
  return {
    handle,
    kind: what.kind,
    owner: ownerOf(request),
    upstream: request.route.pool.upstream,
    instance: instance.url,
    upstreamPath: request.route.upstreamPath,
    upstreamTaskId: what.upstreamTaskId ?? handle,
    // The client's era: what its handle answers in, and what tasks/list shows it in.
    era: 'legacy',
    tool,
    // The backend's: what the gateway speaks to it (src/tasks/upstream-call.ts frames by it).
    protocolVersion: MODERN_VERSION,
    createdAt: now,
    createdAtIso: iso,
    lastUpdatedAtIso: iso,
    ttlMs: wholeTtlMs(ttlMs),
    expiresAt: now + wholeTtlMs(ttlMs),
    pollIntervalMs: enforcedInterval(what.pollIntervalMs, deps.policy.poll.floor, deps.policy.poll.default),
    status: what.status,
    readOnce: deps.policy.tools[tool]?.readOnce ?? false,
    ...(request.trace ? { traceparent: request.trace.taskLink() } : undefined),
  };
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

function refusal(deps: StageDeps, outcome: 'owner-limit' | 'full'): GatewayError {
  return outcome === 'owner-limit'
    ? new GatewayError('TG_ERR_TOO_MANY_TASKS', { data: { maxLiveTasks: deps.policy.maxLivePerPrincipal } })
    : new GatewayError('TG_ERR_STORE_UNAVAILABLE', { detail: 'task store is full' });
}

/** A 2026 result as a 2025 client gets it: without the 2026 discriminator. */
export function withoutResultType(result: JsonObject): JsonObject {
  const { resultType: _type, ...rest } = result;
  return rest;
}

/** A failed backend call as the client's answer (upstream/upstream-failure.ts classifies it). */
export function upstreamFailure(error: unknown): GatewayError {
  return toWireError(error) ?? new GatewayError(upstreamFailureCode(classifyUpstreamError(error)), { cause: error });
}
