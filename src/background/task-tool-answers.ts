/**
 * The status and cancel tools of background calls, answered by the gateway from the store
 * (the backend never sees them). Both find the call as a tasks/* request finds its task: by
 * handle, in the caller's scope (owner, era, upstream); a handle that is unknown, expired,
 * another principal's, or a task that is no background call, gets one and the same answer.
 *
 * The status tool is governed like a poll of the task (tasks.poll): a call before the task's
 * interval has passed since the last one waits out the rest of it, and is then answered as an
 * on-time poll; never a 429, which a host would show as a broken tool. It then waits, up to
 * the wait asked for, for the call to end, so a model needs few turns.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { CLIENT_CAPABILITIES_META, RELATED_TASK_META, requestMeta } from '../mcp/era.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { ProvidedTaskView } from '../task-model/provided-state.js';
import { isInScope, isTerminalStatus, type TaskRecord, type TaskScope } from '../task-model/task-record.js';
import type { GatewayRunTasks, LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import { isHandleShaped } from '../tasks/handle.js';
import { ownerOf } from '../tasks/task-context.js';
import { isObject } from '../mcp/json.js';
import { pause, waitUntilSettled } from './call-watch.js';
import { hasQuestions, streamStatus } from './status-stream.js';
import {
  cancelAnswerText,
  cancelledText,
  failedText,
  questionPendingText,
  runningText,
  unknownHandleText,
  waitingForInputText,
  withRelatedTask,
  type TaskToolNames,
  type ToolResult,
} from './model-texts.js';

export interface ToolAnswerContext {
  readonly deps: StageDeps;
  readonly request: TaskRequest;
  readonly names: TaskToolNames;
  readonly runner: GatewayRunTasks;
  readonly metrics: GatewayMetrics;
}

/** Early status calls are waited out at most this many times before the call is answered anyway. */
const MAX_EARLY_WAITS = 3;

/** A status call: the call's outcome, its status, or (legacy) its questions and then those. */
export async function answerStatus(c: ToolAnswerContext, message: JsonRpcRequest, handle: string, waitMs: number): Promise<LocalAnswer> {
  const until = Date.now() + waitMs;
  const record = await openGoverned(c, handle);
  if (!record) return toolAnswer(c.request, message, unknown(c, 'unknown'));
  const request = c.request;
  request.task = record;
  request.taskOutcome = 'allowed';
  // Input rides on the status call: modern, the client's own retry of an input_required answer
  // (MRTR) carries the answers; legacy, the backend's questions go out on the call's stream.
  const asksOnStream = request.wire.input === 'server-requests';
  const params = isObject(message.params) ? message.params : {};
  if (!asksOnStream && isObject(params.inputResponses)) await c.runner.provideInput(c.deps, c.request, record, params.inputResponses);
  const compose = (view: ProvidedTaskView | undefined) => composeAnswer(c, view);
  if (asksOnStream) {
    const now = await c.deps.store.readProvidedTask(handle);
    if (now && hasQuestions(now)) return streamStatus(c.deps.store, c.request, message, handle, until, compose);
  }
  const view = await waitUntilSettled(c.deps.store, handle, Math.max(0, until - Date.now()), request.abort);
  if (view && asksOnStream && hasQuestions(view)) return streamStatus(c.deps.store, c.request, message, handle, until, compose);
  if (view && !asksOnStream && view.record.status === 'input_required') {
    const asked = inputRequired(view, message);
    if (asked) {
      c.metrics.backgroundStatusCalls.inc({ answer: 'input' });
      request.statusSeen = 'input_required';
      return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: asked } };
    }
  }
  return toolAnswer(c.request, message, await compose(view));
}

/** The status tool's answer for the task as it is now; undefined: it is gone. */
async function composeAnswer(c: ToolAnswerContext, view: ProvidedTaskView | undefined): Promise<ToolResult> {
  // Gone meanwhile: its lifetime ended, or a read-once outcome was read through another call.
  if (!view) return refuse(c, 'not_found');
  const { record } = view;
  c.request.statusSeen = record.status;
  if (record.status === 'input_required') {
    c.metrics.backgroundStatusCalls.inc({ answer: 'input' });
    return (view.state.pendingRequests?.length ?? 0) > 0 ? questionPendingText(record.tool, record.handle, c.names) : waitingForInputText(record.tool, record.handle, c.names);
  }
  if (!isTerminalStatus(record.status)) {
    c.metrics.backgroundStatusCalls.inc({ answer: 'running' });
    return runningText(record.tool, record.handle, record.statusMessage, c.names, record.pollIntervalMs, c.deps.policy.statusMessageMaxLength);
  }
  c.metrics.backgroundStatusCalls.inc({ answer: 'ended' });
  const answer = outcomeOf(view, c.deps.policy.statusMessageMaxLength);
  await delivered(c, record);
  return answer;
}

/**
 * Modern: the backend's questions as the status call's own InputRequiredResult (MRTR), under the
 * keys the task shows; the client retries the status call with inputResponses. Undefined when
 * the request did not declare what the questions need (the client must not be asked then).
 */
function inputRequired({ record, state }: ProvidedTaskView, message: JsonRpcRequest): Record<string, unknown> | undefined {
  const requests = state.inputRequests;
  if (!requests || Object.keys(requests).length === 0) return undefined;
  const declared = requestMeta(message)?.[CLIENT_CAPABILITIES_META];
  const capabilities = isObject(declared) ? declared : {};
  for (const asked of Object.values(requests)) {
    const needs = typeof asked.method === 'string' ? CAPABILITY_OF[asked.method] : undefined;
    if (!needs || !isObject(capabilities[needs])) return undefined;
  }
  return { resultType: 'input_required', inputRequests: requests, _meta: { [RELATED_TASK_META]: { taskId: record.handle } } };
}

/** The client capability each kind of modern input request needs. */
const CAPABILITY_OF: Record<string, string> = { 'elicitation/create': 'elicitation', 'sampling/createMessage': 'sampling', 'roots/list': 'roots' };

export async function answerCancel(c: ToolAnswerContext, handle: string): Promise<ToolResult> {
  const request = c.request;
  request.requestedHandle = handle.slice(0, 64);
  request.taskOperation = 'cancel';
  const found = isHandleShaped(handle) ? await c.deps.store.getTask(handle) : undefined;
  if (!found || !isInScope(found, scopeOf(c.request)) || found.backgroundCall === undefined) return refuse(c, found ? 'denied' : 'not_found');
  request.task = found;
  request.taskOutcome = 'allowed';
  if (await c.runner.cancel(c.deps, found)) {
    request.statusSeen = 'cancelled';
    c.metrics.backgroundCalls.inc({ upstream: found.upstream, outcome: 'cancelled' });
    return cancelAnswerText(found.tool, handle, undefined, c.names);
  }
  const now = await c.deps.store.getTask(handle);
  if (!now) return refuse(c, 'not_found');
  request.statusSeen = now.status;
  return cancelAnswerText(now.tool, handle, now.status, c.names);
}

/**
 * The task behind `handle` if it is the caller's background call, its poll booked: a call that
 * comes before the task's interval has passed waits out the rest of it first.
 */
async function openGoverned(c: ToolAnswerContext, handle: string): Promise<TaskRecord | undefined> {
  const request = c.request;
  request.requestedHandle = handle.slice(0, 64);
  request.taskOperation = 'get';
  if (!isHandleShaped(handle)) return refuseRecord(c, 'not_found');
  const { poll } = c.deps.policy;
  const scope = scopeOf(c.request);
  for (let attempt = 0; ; attempt++) {
    const opened = await c.deps.store.openPoll(handle, scope, Date.now(), { toleranceMs: poll.tolerance, abuseFactor: poll.abuseFactor });
    if (opened.outcome !== 'polled') return refuseRecord(c, opened.outcome);
    const { record, decision } = opened;
    if (record.backgroundCall === undefined) return refuseRecord(c, 'not_found');
    if (decision.verdict === 'forward' || attempt >= MAX_EARLY_WAITS || request.abort.aborted) return record;
    if (decision.verdict === 'abusive') c.deps.observer.pollAbuse(record, ownerOf(c.request));
    await pause(decision.retryAfterMs, request.abort);
  }
}

/** What the first call would have answered: the tool's own result, or why there is none. */
function outcomeOf({ record, state }: ProvidedTaskView, maxMessage: number): ToolResult {
  const outcome = state.outcome;
  if (record.status === 'cancelled' || !outcome) return record.status === 'cancelled' ? cancelledText(record.tool, record.handle) : failedText(record.tool, record.handle, record.statusMessage, maxMessage);
  if ('result' in outcome) return withRelatedTask(outcome.result, record.handle);
  return failedText(record.tool, record.handle, outcome.error.message, maxMessage);
}

/** The outcome was read: counted once, and a read-once tool's task forgotten. */
async function delivered(c: ToolAnswerContext, record: TaskRecord): Promise<void> {
  if (record.readOnce) {
    await c.deps.store.deleteTask(record.handle);
    c.deps.observer.forgotten(record, 'read_once');
  } else if (record.backgroundCall === 'unread') {
    await c.deps.store.updateTask(record.handle, { backgroundCall: 'read' });
  }
  if (record.backgroundCall === 'unread') c.metrics.backgroundCalls.inc({ upstream: record.upstream, outcome: 'delivered' });
}

function scopeOf(request: TaskRequest): TaskScope {
  return { owner: ownerOf(request), era: request.wire.era, upstream: request.route.pool.upstream };
}

/** Unknown, expired and foreign look the same to the caller; only the log and audit trail tell them apart. */
function refuse(c: ToolAnswerContext, reason: 'not_found' | 'denied'): ToolResult {
  refuseRecord(c, reason);
  return unknown(c, 'unknown');
}

function refuseRecord(c: ToolAnswerContext, reason: 'not_found' | 'denied'): undefined {
  c.request.log.info({ rpcMethod: 'tools/call', reason, owner: ownerOf(c.request) }, 'background call lookup refused');
  c.request.taskOutcome = reason;
  return undefined;
}

/** A tool result of the gateway's, in the request's era (modern: every result has a resultType). */
export function toolAnswer(request: TaskRequest, message: JsonRpcRequest, result: ToolResult): LocalAnswer {
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: request.wire.completeResult(result) } };
}

function unknown(c: ToolAnswerContext, answer: 'unknown'): ToolResult {
  if (c.request.taskOperation === 'get') c.metrics.backgroundStatusCalls.inc({ answer });
  return unknownHandleText();
}
