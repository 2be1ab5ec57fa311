/**
 * A backend created a task: mint a handle, store the record, and only once the store has
 * accepted it let the creation result go on, with the handle in place of the backend's id.
 * A creation the gateway refuses (limits, a 2026 client that did not declare the extension)
 * is cancelled upstream and answered with an error instead.
 */
import type { TaskRequest } from './task-request.js';
import { GatewayError, renderErrorBody, toWireError } from '../errors.js';
import { TASKS_EXTENSION } from '../mcp/era.js';
import type { JsonRpcResponse, McpMessage } from '../mcp/jsonrpc.js';
import { hideBackendId } from './backend-ids.js';
import { mintHandle } from './handle.js';
import { enforcedInterval } from '../task-model/poll-rule.js';
import { countCreation, creatorOf, ownerOf, type TaskDeps } from './task-context.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { presentTask, readTask, recordedStatusMessage, type JsonObject } from './task-shapes.js';
import { upstreamSessionOf } from '../mcp/mcp-stage.js';

export async function registerCreatedTask(
  deps: TaskDeps,
  request: TaskRequest,
  response: JsonRpcResponse,
  taskObject: JsonObject,
  tool: string,
): Promise<McpMessage> {
  const era = request.mcp!.era;
  const fields = readTask(taskObject, era);
  const instance = request.instance!;
  if (!fields) {
    // A creation result the gateway cannot read would leak the backend's id if relayed.
    return errorAnswer(request, response, new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'malformed task creation result' }));
  }
  const now = Date.now();
  const override = deps.policy.tools[tool];
  const cap = Math.min(override?.maxTtl ?? Infinity, deps.policy.ttl.max);
  const ttlMs = fields.ttlMs === null || fields.ttlMs === undefined ? cap : Math.min(fields.ttlMs, cap);
  const poll = deps.policy.poll;
  const handle = mintHandle();
  const record: TaskRecord = {
    handle,
    kind: 'backend',
    owner: ownerOf(request),
    upstream: request.route.pool.upstream,
    instance: instance.url,
    upstreamPath: request.route.upstreamPath,
    upstreamTaskId: fields.taskId,
    era,
    tool,
    upstreamSession: era === 'legacy' ? upstreamSessionOf(request) : undefined,
    protocolVersion: protocolVersionOf(request),
    createdAt: now,
    createdAtIso: fields.createdAt ?? new Date(now).toISOString(),
    lastUpdatedAtIso: fields.lastUpdatedAt ?? fields.createdAt ?? new Date(now).toISOString(),
    ttlMs,
    expiresAt: now + ttlMs,
    pollIntervalMs: enforcedInterval(fields.pollIntervalMs, poll.floor, poll.default),
    status: fields.status,
    statusMessage: recordedStatusMessage(fields.statusMessage, deps.policy.statusMessageMaxLength, { handle, upstreamTaskId: fields.taskId }),
    readOnce: override?.readOnce ?? false,
    // With tracing on, the task keeps a link to this request's span (src/tracing/task-calls.ts).
    ...(request.trace ? { traceparent: request.trace.taskLink() } : undefined),
    ...creatorOf(deps, request),
  };

  if (era === 'modern' && !request.declaresTasks) {
    // The backend broke a MUST: a task for a request that did not declare the extension.
    cancelRefused(deps, request, record, 'undeclared');
    return errorAnswer(
      request,
      response,
      new GatewayError('TG_ERR_MISSING_CAPABILITY', { data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } }),
    );
  }

  if (era === 'modern') {
    // The 2026 backend decides to create a task, so this is the first moment it can be counted.
    try {
      await countCreation(deps, record.owner);
    } catch (error) {
      const answer = toWireError(error);
      if (!answer) throw error;
      cancelRefused(deps, request, record, 'rate');
      request.taskOutcome = 'throttled';
      return errorAnswer(request, response, answer);
    }
  }
  let outcome;
  try {
    outcome = await deps.store.createTask(record, deps.policy.maxLivePerPrincipal);
  } catch (error) {
    // The backend made a task no client can ever reach: cancel it before failing closed.
    cancelRefused(deps, request, record, 'store-unavailable');
    throw error;
  }
  if (outcome !== 'created') {
    cancelRefused(deps, request, record, outcome);
    request.taskOutcome = 'throttled';
    return errorAnswer(
      request,
      response,
      outcome === 'owner-limit'
        ? new GatewayError('TG_ERR_TOO_MANY_TASKS', { data: { maxLiveTasks: deps.policy.maxLivePerPrincipal } })
        : new GatewayError('TG_ERR_STORE_UNAVAILABLE', { detail: 'task store is full' }),
    );
  }
  presentTask(taskObject, record);
  // 2025 nests the task: the result around it (its _meta) may name the backend id as well.
  if (era === 'legacy') hideBackendId(response.result, record, 'meta');
  request.createdTask = record;
  deps.observer.created(record);
  return response;
}

/** The session the request used upstream: the task's own when the gateway pinned one. */

function protocolVersionOf(request: TaskRequest): string | undefined {
  const header = request.clientHeaders['mcp-protocol-version'];
  return typeof header === 'string' && header.length <= 32 ? header : undefined;
}

function cancelRefused(deps: TaskDeps, request: TaskRequest, record: TaskRecord, reason: string): void {
  request.log.warn({ reason, tool: record.tool, owner: record.owner }, 'task creation refused; cancelling it upstream');
  deps.callUpstream(record, 'tasks/cancel', { reason: 'refused', during: request.trace }).catch((error: unknown) => {
    request.log.warn({ err: error, upstream: record.upstream }, 'could not cancel a refused task upstream');
  });
}

/**
 * The error the client gets instead of a refused creation result. For a JSON reply the HTTP
 * status follows the error; inside an event stream the status has already been sent.
 */
function errorAnswer(request: TaskRequest, response: JsonRpcResponse, error: GatewayError): JsonRpcResponse {
  request.replyStatus = error.statusIn(request.mcp!.era);
  request.replyHeaders = error.headers;
  const body = renderErrorBody(error, response.id);
  return { kind: 'response', id: response.id, error: body.error, raw: { jsonrpc: '2.0' } };
}
