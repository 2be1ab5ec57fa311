/**
 * The tasks stage on the way in (DESIGN.md §3). For each request it either answers by itself
 * (tasks/list, early polls, refusals) or prepares the forward: the backend's task id in place
 * of the handle, the task's own instance and session, the policy's TTL cap.
 */
import type { TaskRequest } from './task-request.js';
import { GatewayError } from '../errors.js';
import type { PollDecisionWithSnapshot } from '../store/store.js';
import { TASKS_EXTENSION, type Era } from '../mcp/era.js';
import { isObject } from '../mcp/json.js';
import { serializeMessage, type JsonRpcRequest, type JsonRpcResponse, type McpMessage } from '../mcp/jsonrpc.js';
import { isHandleShaped, isServerRequestId } from './handle.js';
import { countCreation, ownerOf, taskKindHandler, type LocalAnswer, type TaskDeps } from './task-context.js';
import { listOwnTasks } from './task-list.js';
import { isInScope, isTaskStatus, type TaskRecord, type TaskScope } from '../task-model/task-record.js';
import { wholeIntervalMs, wireOf } from '../task-model/task-wire.js';
import { ttlWithin } from '../task-model/ttl-policy.js';

const TASK_OPERATIONS = new Set(['tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/update']);

/**
 * What this stage acts on, one way or the other: the requests it answers or rewrites below,
 * and those whose answers it rewrites on the way back (initialize, tools/list and
 * server/discover advertise tasks). Every tasks/* method is the gateway's, known or not.
 */
const GOVERNED_METHODS = new Set(['tools/call', 'tasks/list', 'subscriptions/listen', 'initialize', 'tools/list', 'server/discover']);

/**
 * Whether this stage must see the message on its own. The stage reads one message per body,
 * so the pipeline refuses a batch that holds any such message (docs/security.md, "Batches").
 * A client's response always counts: it answers a server request the gateway relayed under
 * an id of its own, and only this stage can route it back.
 */
export function governsMessage(message: McpMessage): boolean {
  if (message.kind === 'response') return true;
  return message.method.startsWith('tasks/') || GOVERNED_METHODS.has(message.method);
}

export async function planTaskRequest(deps: TaskDeps, request: TaskRequest): Promise<LocalAnswer | undefined> {
  const mcp = request.mcp;
  const message = mcp?.message;
  // A batch reaches this stage only when none of its messages is one this stage governs
  // (governsMessage): there is nothing in it to take over.
  if (!mcp || !message) return undefined;
  if (message.kind === 'response') return routeClientResponse(deps, request, message);
  if (message.kind !== 'request') return undefined;

  const wire = request.wire;
  switch (message.method) {
    case 'tools/call':
      return (await interceptToolCall(deps, request, message)) ?? prepareToolCall(deps, request, message);
    case 'tasks/list':
      if (!wire.hasTaskMethod('tasks/list') || !deps.authEnabled) throw new GatewayError('TG_ERR_METHOD_NOT_FOUND');
      return answerTaskList(deps, request, message);
    default:
      if (!TASK_OPERATIONS.has(message.method)) return takeOverMethod(deps, request, message, wire.era);
      if (!wire.hasTaskMethod(message.method)) {
        if (wire.missingTaskMethod === 'refused') throw new GatewayError('TG_ERR_METHOD_NOT_FOUND');
        return undefined;
      }
      if (!wire.declaresTasks(message)) throw missingTasksCapability();
      return prepareTaskOperation(deps, request, message);
  }
}

/** The registered interceptors, in order (extension-points.ts): the first answer wins. */
/** A method a registered capability answers in the core's place (extension-points.ts). */
async function takeOverMethod(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, era: Era): Promise<LocalAnswer | undefined> {
  for (const takeover of deps.extensions.methodTakeovers) {
    if (takeover.method !== message.method || (takeover.era !== undefined && takeover.era !== era)) continue;
    const answer = await takeover.takeOver(deps, request, message);
    if (answer) return answer;
  }
  return undefined;
}

async function interceptToolCall(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
  for (const interceptor of deps.extensions.toolCallInterceptors) {
    const answer = await interceptor.interceptToolCall(deps, request, message);
    if (answer) return answer;
  }
  return undefined;
}

/** Legacy tasks/list, from the gateway's own records, filtered by owner in the store query. */
async function answerTaskList(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer> {
  const scope: TaskScope = { owner: ownerOf(request), era: request.wire.era, upstream: request.route.pool.upstream };
  const result = await listOwnTasks(deps, scope, paramsOf(message).cursor);
  // Audited (event "list") and counted like every task operation, once it succeeded.
  request.taskOutcome = 'allowed';
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result } };
}

async function prepareTaskOperation(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
  const params = paramsOf(message);
  const handle = params.taskId;
  if (typeof handle === 'string') request.requestedHandle = handle.slice(0, 64);
  const scope: TaskScope = { owner: ownerOf(request), era: request.wire.era, upstream: request.route.pool.upstream };
  let record: TaskRecord;
  if (message.method === 'tasks/get') {
    // Lookup, scope check and poll decision are one store step (one round trip on Redis);
    // a refused lookup leaves the owner's poll clock alone.
    const poll = deps.policy.poll;
    const opened = isHandleShaped(handle)
      ? await deps.store.openPoll(handle, scope, Date.now(), { toleranceMs: poll.tolerance, abuseFactor: poll.abuseFactor })
      : ({ outcome: 'not_found' } as const);
    if (opened.outcome !== 'polled') throw refuse(request, message, opened.outcome);
    record = opened.record;
    const early = governPoll(deps, request, message, record, opened.decision);
    if (early) return early;
    request.snapshotTag = opened.decision.snapshotTag;
  } else {
    const found = isHandleShaped(handle) ? await deps.store.getTask(handle) : undefined;
    if (!found) throw refuse(request, message, 'not_found');
    if (!isInScope(found, scope)) throw refuse(request, message, 'denied');
    record = found;
  }
  if (message.method === 'tasks/result') holdResultWait(deps, request);
  const handler = taskKindHandler(deps, record);
  if (handler) {
    request.task = record;
    request.taskOutcome = 'allowed';
    return handler.answer(deps, request, message, record);
  }
  const instance = request.route.pool.findInstance(record.instance);
  if (!instance) throw new GatewayError('TG_ERR_UPSTREAM_UNAVAILABLE', { detail: 'the instance holding the task is gone' });
  request.instance = instance;
  request.task = record;
  request.taskOutcome = 'allowed';
  params.taskId = record.upstreamTaskId;
  request.upstreamHeaders = wireOf(record.era).taskRouteHeaders(record);
  rewriteBody(request, message);
  return undefined;
}

/** Unknown, expired and foreign look the same to the client; only the log tells them apart. */
function refuse(request: TaskRequest, message: JsonRpcRequest, reason: 'not_found' | 'denied'): GatewayError {
  request.log.info({ rpcMethod: message.method, reason, owner: ownerOf(request) }, 'task request refused');
  request.taskOutcome = reason;
  return new GatewayError('TG_ERR_TASK_NOT_FOUND');
}

/** Applies the store's poll decision: undefined to forward, else the early answer (or a 429). */
function governPoll(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord, decision: PollDecisionWithSnapshot): LocalAnswer | undefined {
  const poll = deps.policy.poll;
  request.pollOutcome = decision.verdict === 'forward' ? 'forwarded' : decision.verdict === 'early' && poll.mode === 'cached' ? 'cached' : 'rejected';
  if (decision.verdict === 'forward') return undefined;
  if (decision.verdict === 'abusive') deps.observer.pollAbuse(record, ownerOf(request));
  if (decision.verdict === 'abusive' || poll.mode === 'reject') {
    request.taskOutcome = 'throttled';
    const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    throw new GatewayError('TG_ERR_POLL_TOO_EARLY', {
      headers: { 'retry-after': String(seconds) },
      data: { retryAfterMs: Math.ceil(decision.retryAfterMs), pollIntervalMs: wholeIntervalMs(record.pollIntervalMs) },
    });
  }
  if (decision.snapshot === undefined) {
    // What the record alone says, as tasks/get would: none when the era wants more (a modern
    // task that ended or waits for input carries its result, error or questions).
    const result = wireOf(record.era).recordAnswer(record);
    if (!result) {
      // Nothing the record alone can say validly: this early poll is forwarded after all.
      request.pollOutcome = 'forwarded';
      return undefined;
    }
    request.taskOutcome = 'allowed';
    request.task = record;
    request.statusSeen = record.status;
    return { status: 200, body: { jsonrpc: '2.0', id: message.id, result } };
  }
  request.taskOutcome = 'allowed';
  request.task = record;
  // The snapshot is this task's own last answer, already rewritten for its owner and stored
  // as the JSON text it was sent as: it goes out as that text, read only for the status seen.
  const status = (JSON.parse(decision.snapshot) as { status?: unknown }).status;
  request.statusSeen = isTaskStatus(status) ? status : record.status;
  return { status: 200, body: `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${decision.snapshot}}` };
}

/**
 * Legacy tasks/result may block until the task ends: each open one holds a connection here and
 * upstream, so a principal may hold only so many at once. Released when the answer ends.
 */
function holdResultWait(deps: TaskDeps, request: TaskRequest): void {
  const owner = ownerOf(request);
  const open = deps.resultWaits.get(owner) ?? 0;
  if (open >= deps.policy.maxResultWaitsPerPrincipal) {
    request.taskOutcome = 'throttled';
    throw new GatewayError('TG_ERR_RATE_LIMITED', { detail: 'too many open tasks/result waits', headers: { 'retry-after': '1' } });
  }
  deps.resultWaits.set(owner, open + 1);
  request.releaseResultWait = () => {
    const left = (deps.resultWaits.get(owner) ?? 1) - 1;
    if (left > 0) deps.resultWaits.set(owner, left);
    else deps.resultWaits.delete(owner);
  };
}

async function prepareToolCall(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<undefined> {
  const params = paramsOf(message);
  const tool = typeof params.name === 'string' ? params.name.slice(0, 128) : 'unknown';
  request.toolName = tool;
  const wire = request.wire;
  if (wire.taskStart === 'server') {
    // The backend decides whether the call becomes a task; it may only for a request that declared the extension.
    request.declaresTasks = wire.asksForTask(message);
    return undefined;
  }
  // The client asks for the task (params.task), so its creation is counted before the backend works.
  if (!isObject(params.task)) return undefined;
  await countCreation(deps, ownerOf(request));
  // The client asks for a lifetime; the backend is asked for at most the policy's, in whole
  // milliseconds (TaskMetadata.ttl is an integer): a client's 1500.5 reaches the backend as 1500.
  params.task.ttl = ttlWithin(deps.policy, tool, params.task.ttl);
  rewriteBody(request, message);
  return undefined;
}

/** A client's answer to a server→client request the gateway relayed under its own id. */
async function routeClientResponse(deps: TaskDeps, request: TaskRequest, message: JsonRpcResponse): Promise<LocalAnswer | undefined> {
  if (!isServerRequestId(message.id)) return undefined;
  const route = await deps.store.takeServerRequest(message.id);
  if (!route || route.upstream !== request.route.pool.upstream) return undefined;
  for (const taker of deps.extensions.clientResponses) {
    const answer = await taker.takeClientResponse(deps, request, route, message);
    if (answer) return answer;
  }
  if (route.handle !== undefined) {
    const handle = route.handle;
    await Promise.all(deps.extensions.taskKinds.map((kind) => kind.inputAnswered(handle, message.id as string)));
  }
  const instance = request.route.pool.findInstance(route.instance);
  if (!instance) return undefined;
  message.id = route.upstreamId;
  request.instance = instance;
  request.upstreamHeaders = { 'mcp-session-id': route.upstreamSession ?? null };
  rewriteBody(request, message);
  return undefined;
}

function missingTasksCapability(): GatewayError {
  return new GatewayError('TG_ERR_MISSING_CAPABILITY', {
    data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  });
}

function paramsOf(message: JsonRpcRequest): Record<string, unknown> {
  if (isObject(message.params)) return message.params;
  // A missing params (the SDK 1.x client sends tasks/list without one) reads as empty.
  const params: Record<string, unknown> = {};
  message.params = params;
  return params;
}

function rewriteBody(request: TaskRequest, message: JsonRpcRequest | JsonRpcResponse): void {
  request.mcp!.body = Buffer.from(serializeMessage(message));
}
