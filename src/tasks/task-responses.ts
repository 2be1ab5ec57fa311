/**
 * The tasks stage on the way back: every message from the backend (a JSON reply, or each
 * event of a stream) passes through here before the client sees it. Backend task ids become
 * handles wherever they travel; the records learn each status the backend reports; the
 * gateway's lifetimes and poll intervals replace the backend's.
 */
import type { TaskRequest } from './task-request.js';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { MessageHook, MessageRewrite } from '../mcp/json-reply.js';
import { mintServerRequestId } from './handle.js';
import { SERVER_REQUEST_TTL_MS, type TaskDeps } from './task-context.js';
import { registerCreatedTask } from './task-creation.js';
import { upstreamSessionOf } from '../mcp/mcp-stage.js';
import { changesNothing, isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import { hideBackendId, type Shape } from '../task-model/backend-ids.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import { presentDetailedTask, wireOf, wireOfStatusNotification, type TaskFields } from '../task-model/task-wire.js';
import { nextState, presentPolledAnswer } from '../task-model/poll-answer.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';

export function createTaskResponseHook(deps: TaskDeps, request: TaskRequest): MessageHook {
  return async (message) => {
    if (message.kind === 'response') return rewriteResponse(deps, request, message);
    if (message.kind === 'request') return rewriteServerRequest(deps, request, message);
    return rewriteNotification(deps, request, message);
  };
}

async function rewriteResponse(deps: TaskDeps, request: TaskRequest, response: JsonRpcResponse): Promise<MessageRewrite> {
  const sent = request.mcp?.message;
  const answersThisRequest = sent?.kind === 'request' && sent.id === response.id;
  const method = answersThisRequest ? sent.method : undefined;
  const wire = request.wire;
  const record = request.task;

  if (response.error) {
    // Backend errors about a task may quote its id, in the message or the data; the client
    // only knows the handle.
    return record && hideBackendId(response.error, record) ? response : undefined;
  }
  const result = response.result;
  if (!isObject(result)) return undefined;

  if (method === 'initialize') {
    filterResult(deps, request, method, result);
    advertiseTaskList(result, deps.authEnabled);
    return response;
  }
  // The registered filters see the result (extension-points.ts): tools/list and
  // server/discover advertise the tasks the gateway runs itself, and add its task tools.
  if (answersThisRequest && filterResult(deps, request, method, result)) return response;
  // A creation result, on the POST stream or replayed on a resumed GET stream (a session's).
  const created = wire.creationTaskObject(result);
  if (created && (method === 'tools/call' || (!answersThisRequest && wire.sessions))) {
    return registerCreatedTask(deps, request, response, created, method === 'tools/call' ? (request.toolName ?? 'unknown') : 'unknown');
  }
  if (record && answersThisRequest) {
    if (method === 'tasks/cancel' && wire.cancelAnswer === 'task') {
      // The client changed the task: whatever snapshot early polls would get is stale now.
      await deps.store.invalidatePoll(record.handle);
      return presentPolledTask(deps, request, response, result, record);
    }
    if (method === 'tasks/get') return presentPolledTask(deps, request, response, result, record);
    if (method === 'tasks/result') {
      // The tool's result, carried for the client: only its _meta is the gateway's.
      const changed = await hideInMessage(deps, request, result, 'meta');
      await forgetIfReadOnce(deps, record);
      return changed ? response : undefined;
    }
    if (method === 'tasks/update' || method === 'tasks/cancel') {
      // Acks (a cancel that answers the task was presented above): the standard result shape,
      // whatever the backend put there.
      wire.markComplete(result);
      hideBackendId(result, record);
      await deps.store.invalidatePoll(record.handle);
    }
    return response;
  }
  // Most replies (every plain tools/call) carry no task: relayed as the bytes they came as.
  return (await hideInMessage(deps, request, result, 'meta')) ? response : undefined;
}

function filterResult(deps: TaskDeps, request: TaskRequest, method: string | undefined, result: JsonObject): boolean {
  if (method === undefined) return false;
  let changed = false;
  for (const filter of deps.extensions.resultFilters) changed = filter.filterResult(request, method, result) || changed;
  return changed;
}

/** tasks/get (and a legacy tasks/cancel, which answers with the task): learn, present, remember. */
async function presentPolledTask(deps: TaskDeps, request: TaskRequest, response: JsonRpcResponse, result: JsonObject, record: TaskRecord): Promise<MessageRewrite> {
  const presented = presentPolledAnswer(deps.policy, record, result);
  if (!presented) return response;
  const { patch, updated } = presented;
  request.statusSeen = updated.status;
  const method = request.mcp?.message?.kind === 'request' ? request.mcp.message.method : undefined;
  if (method !== 'tasks/get') {
    // Legacy tasks/cancel: the client changed the task, and the answer says so only once the
    // record does.
    await deps.store.updateTask(record.handle, patch);
    deps.observer.statusChanged(record, record.status, updated.status);
    return response;
  }
  // 2026-07-28 delivers the result inline: for a read-once tool this answer is the delivery.
  const delivered = wireOf(record.era).resultInline && record.readOnce && isTerminalStatus(updated.status) && updated.status !== 'cancelled';
  // A poll that ends the task (or revives it) or moves its lifetime also moves the owner's
  // live count and the expiry index, one more step on a shared store.
  const movesIndexes = isTerminalStatus(record.status) !== isTerminalStatus(updated.status) || record.expiresAt !== updated.expiresAt;
  const snapshot = JSON.stringify(result);
  // The client gets the same text the snapshot holds: the result is not serialised twice.
  response.resultText = snapshot;
  const written = deps.store.recordPoll(record, patch, snapshot, request.snapshotTag);
  // Listeners on every replica hear of a status this poll was the first to see (src/push/).
  if (updated.status !== record.status) written.then(() => deps.store.events.publish(record.handle)).catch(() => undefined);
  if (delivered || movesIndexes) {
    // Once or twice per task, and these must hold before the client hears of them: a task
    // the client is told has ended no longer counts against its owner's limit, and the
    // read-once deletion must not race the write-back's own index steps.
    await written;
    deps.observer.statusChanged(record, record.status, updated.status);
    if (delivered) await forgetIfReadOnce(deps, updated);
    return response;
  }
  // The common poll (a running task, still running) does not wait for its write-back:
  // - the command is written to the store connection before this reply is sent, so this
  //   replica's next read of the task (the owner's next poll) is ordered after it;
  // - the poll clock itself was already booked atomically on the way in (openPoll), so
  //   replicas keep agreeing on who is early whether or not this write lands;
  // - a write-back that fails loses only this poll's status and snapshot: an early poll is
  //   served the previous snapshot (or the creation state), and the next forwarded poll
  //   writes both again.
  // Its failure is counted by the store metrics (taskgate_store_errors_total) and logged
  // here; the request id in the log line joins it to the audit event that names the task.
  written.catch((error: unknown) => {
    request.log.warn({ err: error, rpcMethod: method, upstream: record.upstream, tool: record.tool }, 'could not record a forwarded poll; the next forwarded poll writes it again');
  });
  deps.observer.statusChanged(record, record.status, updated.status);
  return response;
}

async function learnStatus(deps: TaskDeps, record: TaskRecord, fields: TaskFields): Promise<TaskRecord> {
  const patch = nextState(deps.policy, record, fields);
  if (changesNothing(record, patch)) return record;
  await deps.store.updateTask(record.handle, patch);
  // The client has just been told a status the poll snapshot does not have: an early poll
  // answered from it would show the task going back. The next poll is forwarded instead
  // (once per status change; a new message or lifetime alone leaves the cache as it is).
  if (patch.status !== record.status) await deps.store.invalidatePoll(record.handle);
  deps.observer.statusChanged(record, record.status, fields.status);
  return { ...record, ...patch };
}

async function forgetIfReadOnce(deps: TaskDeps, record: TaskRecord): Promise<void> {
  if (!record.readOnce) return;
  await deps.store.deleteTask(record.handle);
  deps.observer.forgotten(record, 'read_once');
}

/** Legacy: a server→client request (elicitation, sampling) relayed under a gateway-chosen id. */
async function rewriteServerRequest(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<MessageRewrite> {
  // The question is the task's, for the client: only its _meta is the gateway's.
  const changed = isObject(message.params) && (await hideInMessage(deps, request, message.params, 'meta'));
  if (!request.instance) return changed ? message : undefined;
  const id = mintServerRequestId();
  await deps.store.putServerRequest(
    id,
    { upstream: request.route.pool.upstream, instance: request.instance.url, upstreamSession: upstreamSessionOf(request), upstreamId: message.id },
    SERVER_REQUEST_TTL_MS,
  );
  message.id = id;
  return message;
}

async function rewriteNotification(deps: TaskDeps, request: TaskRequest, message: JsonRpcNotification): Promise<MessageRewrite> {
  if (!isObject(message.params)) return undefined;
  const wire = wireOfStatusNotification(message.method);
  if (wire) {
    const fields = wire.readTask(message.params);
    const record = fields && (await recordOfUpstreamTask(deps, request, fields.taskId));
    // A task the gateway does not hold has no handle to show; its backend id must not leak.
    if (!fields || !record) return null;
    const updated = await learnStatus(deps, record, fields);
    presentDetailedTask(message.params, updated);
    return message;
  }
  // Progress, log lines: the backend's words about the task (its id hidden in all of them).
  // Notifications with no task in them go on as the bytes they came as.
  return (await hideInMessage(deps, request, message.params, 'whole')) ? message : undefined;
}

/**
 * What a message says about a task (the one the request is about, or the one its related-task
 * _meta names), with the backend id hidden (backend-ids.ts) in the parts `shape` allows. True
 * when the holder changed; false when it names no task (nothing to rewrite).
 */
async function hideInMessage(deps: TaskDeps, request: TaskRequest, holder: JsonObject, shape: Shape): Promise<boolean> {
  const related = await rewriteRelatedTask(deps, request, holder, request.task);
  const record = related.record ?? request.task;
  const hidden = record !== undefined && hideBackendId(holder, record, shape);
  return related.changed || hidden;
}

/**
 * `_meta["io.modelcontextprotocol/related-task"].taskId` → the handle, or the key removed;
 * `record` is the task it named, when the gateway holds one.
 */
async function rewriteRelatedTask(deps: TaskDeps, request: TaskRequest, holder: JsonObject, known: TaskRecord | undefined): Promise<{ changed: boolean; record?: TaskRecord }> {
  const meta = holder._meta;
  if (!isObject(meta) || !isObject(meta[RELATED_TASK])) return { changed: false };
  const related = meta[RELATED_TASK];
  const upstreamId = related.taskId;
  // Not a string: not an id the gateway could have minted a handle for; removed all the same,
  // as an id the client cannot use.
  if (typeof upstreamId !== 'string') {
    delete meta[RELATED_TASK];
    return { changed: true };
  }
  const record = known?.upstreamTaskId === upstreamId ? known : await recordOfUpstreamTask(deps, request, upstreamId);
  if (record) related.taskId = record.handle;
  else delete meta[RELATED_TASK];
  return { changed: true, record };
}

async function recordOfUpstreamTask(deps: TaskDeps, request: TaskRequest, upstreamTaskId: string): Promise<TaskRecord | undefined> {
  const known = request.task;
  if (known?.upstreamTaskId === upstreamTaskId) return known;
  const instance = request.instance;
  if (!instance) return undefined;
  const handle = await deps.store.findTaskHandle(request.route.pool.upstream, instance.url, upstreamTaskId);
  const record = handle === undefined ? undefined : await deps.store.getTask(handle);
  // A task the gateway runs itself has no backend id: nothing a backend says can be about it.
  return record?.kind === 'backend' ? record : undefined;
}

/** Legacy tasks/list is served by the gateway: advertised exactly when it can tell principals apart. */
function advertiseTaskList(result: JsonObject, authEnabled: boolean): void {
  const capabilities = result.capabilities;
  if (!isObject(capabilities) || !isObject(capabilities.tasks)) return;
  if (authEnabled) capabilities.tasks.list = {};
  else delete capabilities.tasks.list;
}

