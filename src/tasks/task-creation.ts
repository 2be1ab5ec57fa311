/**
 * A backend created a task: mint a handle, store the record, and only once the store has
 * accepted it let the creation result go on, with the handle in place of the backend's id.
 * A creation the gateway refuses (limits, a modern client that did not declare the extension)
 * is cancelled upstream and answered with an error instead.
 */
import type { TaskRequest } from './task-request.js';
import { GatewayError, renderErrorBody, toWireError } from '../errors.js';
import { TASKS_EXTENSION } from '../mcp/era.js';
import type { JsonObject } from '../mcp/json.js';
import type { JsonRpcResponse, McpMessage } from '../mcp/jsonrpc.js';
import { hideBackendId } from '../task-model/backend-ids.js';
import { buildTaskRecord } from '../task-model/record-builder.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { presentTask } from '../task-model/task-wire.js';
import { advertisedTtl, ttlCap } from '../task-model/ttl-policy.js';
import { mintHandle } from './handle.js';
import { clientProtocolVersion, countCreation, creationRefusal, creatorOf, taskOrigin, type TaskDeps } from './task-context.js';
import { upstreamSessionOf } from '../mcp/mcp-stage.js';

export async function registerCreatedTask(
  deps: TaskDeps,
  request: TaskRequest,
  response: JsonRpcResponse,
  taskObject: JsonObject,
  tool: string,
): Promise<McpMessage> {
  const wire = request.wire;
  const fields = wire.readTask(taskObject);
  const instance = request.instance!;
  if (!fields) {
    // A creation result the gateway cannot read would leak the backend's id if relayed.
    return errorAnswer(request, response, new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'malformed task creation result' }));
  }
  const record = buildTaskRecord(
    {
      handle: mintHandle(),
      kind: 'backend',
      ...taskOrigin(request, instance.url),
      upstreamTaskId: fields.taskId,
      era: wire.era,
      tool,
      upstreamSession: wire.sessions ? upstreamSessionOf(request) : undefined,
      protocolVersion: clientProtocolVersion(request),
      ttlMs: advertisedTtl(fields.ttlMs, ttlCap(deps.policy, tool)),
      pollIntervalMs: fields.pollIntervalMs,
      status: fields.status,
      statusMessage: fields.statusMessage,
      createdAtIso: fields.createdAt,
      lastUpdatedAtIso: fields.lastUpdatedAt,
      ...creatorOf(deps, request),
    },
    deps.policy,
  );

  if (wire.taskStart === 'server') {
    if (!request.declaresTasks) {
      // The backend broke a MUST: a task for a request that did not declare the extension.
      cancelRefused(deps, request, record, 'undeclared');
      return errorAnswer(
        request,
        response,
        new GatewayError('TG_ERR_MISSING_CAPABILITY', { data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } }),
      );
    }
    // The backend decides to create a task, so this is the first moment it can be counted.
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
      creationRefusal(deps, outcome),
    );
  }
  presentTask(taskObject, record);
  // A nested task (legacy): the result around it (its _meta) may name the backend id as well.
  if (taskObject !== response.result) hideBackendId(response.result, record, 'meta');
  request.createdTask = record;
  deps.observer.created(record);
  return response;
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
  request.replyStatus = error.statusIn(request.wire.era);
  request.replyHeaders = error.headers;
  const body = renderErrorBody(error, response.id);
  return { kind: 'response', id: response.id, error: body.error, raw: { jsonrpc: '2.0' } };
}
