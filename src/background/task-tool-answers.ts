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
import type { FastifyRequest } from 'fastify';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { ProvidedTaskView } from '../task-model/provided-state.js';
import { isInScope, isTerminalStatus, type TaskRecord, type TaskScope } from '../task-model/task-record.js';
import type { GatewayRunTasks, StageDeps } from '../tasks/extension-points.js';
import { isHandleShaped } from '../tasks/handle.js';
import { ownerOf } from '../tasks/task-context.js';
import { pause, waitUntilSettled } from './call-watch.js';
import {
  cancelAnswerText,
  cancelledText,
  failedText,
  runningText,
  unknownHandleText,
  waitingForInputText,
  withRelatedTask,
  type TaskToolNames,
  type ToolResult,
} from './model-texts.js';

export interface ToolAnswerContext {
  readonly deps: StageDeps;
  readonly request: FastifyRequest;
  readonly names: TaskToolNames;
  readonly runner: GatewayRunTasks;
  readonly metrics: GatewayMetrics;
}

/** Early status calls are waited out at most this many times before the call is answered anyway. */
const MAX_EARLY_WAITS = 3;

export async function answerStatus(c: ToolAnswerContext, handle: string, waitMs: number): Promise<ToolResult> {
  const record = await openGoverned(c, handle);
  if (!record) return unknown(c, 'unknown');
  const tg = c.request.tg;
  tg.task = record;
  tg.taskOutcome = 'allowed';
  const view = await waitUntilSettled(c.deps.store, handle, waitMs, tg.abort);
  // Gone meanwhile: its lifetime ended, or a read-once outcome was read through another call.
  if (!view) return refuse(c, 'not_found');
  tg.statusSeen = view.record.status;
  if (!isTerminalStatus(view.record.status)) {
    const { record: now } = view;
    if (now.status === 'input_required') {
      c.metrics.backgroundStatusCalls.inc({ answer: 'input' });
      return waitingForInputText(now.tool, handle, c.names);
    }
    c.metrics.backgroundStatusCalls.inc({ answer: 'running' });
    return runningText(now.tool, handle, now.statusMessage, c.names, now.pollIntervalMs, c.deps.policy.statusMessageMaxLength);
  }
  c.metrics.backgroundStatusCalls.inc({ answer: 'ended' });
  const answer = outcomeOf(view, c.deps.policy.statusMessageMaxLength);
  await delivered(c, view.record);
  return answer;
}

export async function answerCancel(c: ToolAnswerContext, handle: string): Promise<ToolResult> {
  const tg = c.request.tg;
  tg.requestedHandle = handle.slice(0, 64);
  tg.taskOperation = 'cancel';
  const found = isHandleShaped(handle) ? await c.deps.store.getTask(handle) : undefined;
  if (!found || !isInScope(found, scopeOf(c.request)) || found.backgroundCall === undefined) return refuse(c, found ? 'denied' : 'not_found');
  tg.task = found;
  tg.taskOutcome = 'allowed';
  if (await c.runner.cancel(c.deps, found)) {
    tg.statusSeen = 'cancelled';
    c.metrics.backgroundCalls.inc({ upstream: found.upstream, outcome: 'cancelled' });
    return cancelAnswerText(found.tool, handle, undefined, c.names);
  }
  const now = await c.deps.store.getTask(handle);
  if (!now) return refuse(c, 'not_found');
  tg.statusSeen = now.status;
  return cancelAnswerText(now.tool, handle, now.status, c.names);
}

/**
 * The task behind `handle` if it is the caller's background call, its poll booked: a call that
 * comes before the task's interval has passed waits out the rest of it first.
 */
async function openGoverned(c: ToolAnswerContext, handle: string): Promise<TaskRecord | undefined> {
  const tg = c.request.tg;
  tg.requestedHandle = handle.slice(0, 64);
  tg.taskOperation = 'get';
  if (!isHandleShaped(handle)) return refuseRecord(c, 'not_found');
  const { poll } = c.deps.policy;
  const scope = scopeOf(c.request);
  for (let attempt = 0; ; attempt++) {
    const opened = await c.deps.store.openPoll(handle, scope, Date.now(), { toleranceMs: poll.tolerance, abuseFactor: poll.abuseFactor });
    if (opened.outcome !== 'polled') return refuseRecord(c, opened.outcome);
    const { record, decision } = opened;
    if (record.backgroundCall === undefined) return refuseRecord(c, 'not_found');
    if (decision.verdict === 'forward' || attempt >= MAX_EARLY_WAITS || tg.abort.aborted) return record;
    if (decision.verdict === 'abusive') c.deps.observer.pollAbuse(record, ownerOf(c.request));
    await pause(decision.retryAfterMs, tg.abort);
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

function scopeOf(request: FastifyRequest): TaskScope {
  return { owner: ownerOf(request), era: request.tg.mcp!.era, upstream: request.tg.route.pool.upstream };
}

/** Unknown, expired and foreign look the same to the caller; only the log and audit trail tell them apart. */
function refuse(c: ToolAnswerContext, reason: 'not_found' | 'denied'): ToolResult {
  refuseRecord(c, reason);
  return unknown(c, 'unknown');
}

function refuseRecord(c: ToolAnswerContext, reason: 'not_found' | 'denied'): undefined {
  c.request.log.info({ rpcMethod: 'tools/call', reason, owner: ownerOf(c.request) }, 'background call lookup refused');
  c.request.tg.taskOutcome = reason;
  return undefined;
}

function unknown(c: ToolAnswerContext, answer: 'unknown'): ToolResult {
  if (c.request.tg.taskOperation === 'get') c.metrics.backgroundStatusCalls.inc({ answer });
  return unknownHandleText();
}
