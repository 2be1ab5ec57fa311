/**
 * tasks/get, tasks/update and tasks/cancel of a bridged task, the 2026-07-28 way, for a task a
 * 2025-11-25 backend holds in the session the record names. The tasks stage has checked the
 * owner and governed the poll (an early poll gets the snapshot written here).
 *   tasks/get     legacy tasks/get; once the task ended, its tasks/result inline (`result`, or a
 *                 JSON-RPC `error`: failed). Legacy `failed` with an isError result is modern
 *                 `completed` with that result. While it is input_required, the backend's
 *                 questions (released only on a legacy tasks/result stream) are read from a
 *                 short tasks/result read and shown as `inputRequests`, under keys of the
 *                 gateway's; the snapshot keeps them for the next polls and the other replicas
 *   tasks/update  each answer goes to the backend's session as the response to its question
 *   tasks/cancel  legacy tasks/cancel in the session; always acknowledged
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import { RELATED_TASK_META } from '../mcp/era.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest, JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { Instance } from '../routing/balancer.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import { hideBackendId } from '../task-model/backend-ids.js';
import { nextState } from '../task-model/poll-answer.js';
import { jsonRpcErrorOf, LEGACY_WIRE, MODERN_WIRE, taskFromRecord, type TaskFields } from '../task-model/task-wire.js';
import type { LocalAnswer, StageDeps, TaskDeps } from '../tasks/extension-points.js';
import { mintServerRequestId } from '../tasks/handle.js';
import { SERVER_REQUEST_TTL_MS } from '../tasks/task-context.js';
import { learn, LOST_MESSAGE } from './backend-poll.js';
import type { BridgeContext } from './bridge-context.js';
import { upstreamFailure } from '../upstream/upstream-failure.js';
import { answerInSession, callInSession } from './legacy-sessions.js';
import { rpcResponseOf } from '../mcp/event-stream.js';
import type { RpcAnswer } from './rpc-exchange.js';

/** How long a poll reads a tasks/result stream for the backend's questions. */
const QUESTION_READ_MS = 1500;
/** Once a question came, how long the read waits for more. */
const QUESTION_QUIET_MS = 200;

const ACK = (message: JsonRpcRequest): LocalAnswer => ({ status: 200, body: { jsonrpc: '2.0', id: message.id, result: { resultType: 'complete' } } });

/** Asks the backend one legacy method about the task: its JSON-RPC response, if it sent one. */
type Ask = (method: 'tasks/get' | 'tasks/result', params: JsonObject) => Promise<JsonRpcResponse | undefined>;

export async function answerModernGet(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
  const instance = instanceOf(request, record);
  const ask: Ask = async (method, params) => (await inSession(ctx, request, instance, record, method, params)).response;
  const questions = () => questionsOf(ctx, deps, request, instance, record);
  const { text, updated } = await learnFromBackend(deps, record, ask, questions, request.snapshotTag);
  request.statusSeen = updated.status;
  ctx.count(request, 'tasks/get', 'ok');
  if (updated.readOnce && (updated.status === 'completed' || updated.status === 'failed')) {
    await deps.store.deleteTask(updated.handle);
    deps.observer.forgotten(updated, 'read_once');
  }
  return { status: 200, body: `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${text}}` };
}

/**
 * For a listener (src/push/), with no client request at hand: the same questions to the
 * backend through the gateway's own calls (src/upstream/task-calls.ts speaks legacy in the task's
 * session for a bridged record). The questions of an input_required task are the ones the
 * snapshot holds: reading them takes a tasks/result stream, which a client's poll opens.
 */
export async function refreshModern(ctx: BridgeContext, deps: TaskDeps, record: TaskRecord): Promise<TaskRecord> {
  if (isTerminalStatus(record.status)) return record;
  const ask: Ask = async (method, params) => {
    void params;
    const answer = await deps.callUpstream(record, method, { reason: 'push' });
    return rpcResponseOf(answer.body, answer.contentType);
  };
  const questions = async () => ({ asked: await shownQuestions(deps, record) ?? {} });
  const { updated } = await learnFromBackend(deps, record, ask, questions, undefined);
  ctx.metrics.bridgeOperations.inc({ upstream: record.upstream, client: MODERN_WIRE.revision, backend: LEGACY_WIRE.revision, method: 'tasks/get', outcome: 'ok' });
  return updated;
}

/** The backend's view as a modern DetailedTask, stored as the record and the poll snapshot. */
async function learnFromBackend(deps: StageDeps, record: TaskRecord, ask: Ask, questions: () => Promise<{ asked: JsonObject } | { final: RpcAnswer }>, tag: string | undefined): Promise<{ text: string; updated: TaskRecord }> {
  let detailed: JsonObject;
  let updated = record;
  if (record.status === 'cancelled') {
    detailed = {};
  } else {
    const fields = LEGACY_WIRE.readTask((await ask('tasks/get', { taskId: record.upstreamTaskId }))?.result);
    if (!fields) ({ detailed, updated } = lostTask(deps, record));
    else ({ detailed, updated } = await outcomeOf(deps, record, fields, ask, questions));
  }
  const task: JsonObject = { ...taskFromRecord(updated), resultType: 'complete', ...detailed };
  hideBackendId(task, updated, 'task');
  const text = JSON.stringify(task);
  await learn(deps, record, { patch: updated === record ? {} : diff(record, updated), updated }, { text, tag });
  return { text, updated };
}

/** What a legacy status means for a modern DetailedTask: the inline parts, and the record after it. */
async function outcomeOf(deps: StageDeps, record: TaskRecord, fields: TaskFields, ask: Ask, questions: () => Promise<{ asked: JsonObject } | { final: RpcAnswer }>): Promise<{ detailed: JsonObject; updated: TaskRecord }> {
  if (fields.status === 'input_required') {
    const inputRequests = await questions();
    if ('final' in inputRequests) return finalOutcome(deps, record, fields, inputRequests.final.response);
    return { detailed: { inputRequests: inputRequests.asked }, updated: { ...record, ...nextState(deps.policy, record, fields) } };
  }
  if (fields.status === 'completed' || fields.status === 'failed') {
    return finalOutcome(deps, record, fields, await ask('tasks/result', { taskId: record.upstreamTaskId }));
  }
  return { detailed: {}, updated: { ...record, ...nextState(deps.policy, record, fields) } };
}

/** The tasks/result answer as the inline result (completed, even with isError) or error (failed). */
function finalOutcome(deps: StageDeps, record: TaskRecord, fields: TaskFields, response: JsonRpcResponse | undefined): { detailed: JsonObject; updated: TaskRecord } {
  if (response && isObject(response.result)) {
    const result: JsonObject = { ...response.result, resultType: 'complete' };
    if (isObject(result._meta)) {
      const { [RELATED_TASK_META]: _related, ...meta } = result._meta;
      result._meta = meta;
    }
    return { detailed: { result }, updated: { ...record, ...nextState(deps.policy, record, { ...fields, status: 'completed' }) } };
  }
  const error = jsonRpcErrorOf(response?.error ?? { code: -32603, message: LOST_MESSAGE });
  return { detailed: { error }, updated: { ...record, ...nextState(deps.policy, record, { ...fields, status: 'failed', statusMessage: fields.statusMessage ?? error.message as string }) } };
}

/** The questions the snapshot already shows for this input_required task, if any. */
async function shownQuestions(deps: StageDeps, record: TaskRecord): Promise<JsonObject | undefined> {
  const held = await deps.store.readPollSnapshot(record.handle);
  const shown = held?.snapshot ? (JSON.parse(held.snapshot) as JsonObject) : undefined;
  return shown?.status === 'input_required' && isObject(shown.inputRequests) && Object.keys(shown.inputRequests).length > 0 ? shown.inputRequests : undefined;
}

/**
 * The questions of an input_required task: those already shown (the snapshot), else what a short
 * tasks/result read releases, each under a key of the gateway's whose route (in the store)
 * says where its answer goes. `final`: the read brought the task's end instead.
 */
async function questionsOf(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, instance: Instance, record: TaskRecord): Promise<{ asked: JsonObject } | { final: RpcAnswer }> {
  const shown = await shownQuestions(deps, record);
  if (shown) return { asked: shown };
  const asked: JsonObject = {};
  let answer: RpcAnswer | undefined;
  try {
    answer = await callInSession(request, instance, sessionOf(record), 'tasks/result', { taskId: record.upstreamTaskId }, {
      timeoutMs: QUESTION_READ_MS,
      quietAfterRequestsMs: QUESTION_QUIET_MS,
      onServerRequest: async (question) => {
        const key = mintServerRequestId();
        await deps.store.putServerRequest(key, { upstream: record.upstream, instance: instance.url, upstreamSession: record.upstreamSession, upstreamId: question.id, handle: record.handle, inputKey: key }, SERVER_REQUEST_TTL_MS);
        const params = isObject(question.params) ? { ...question.params } : {};
        if (isObject(params._meta)) {
          const { [RELATED_TASK_META]: _related, ...meta } = params._meta;
          params._meta = meta;
        }
        asked[key] = { method: question.method, params };
        return false;
      },
    });
  } catch {
    // Nothing released within the read: no question to show yet.
  }
  if (answer?.response) return { final: answer };
  ctx.logger.debug({ upstream: record.upstream, questions: Object.keys(asked).length }, 'a bridged task\'s questions read for its 2026 client');
  return { asked };
}

export async function answerModernUpdate(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
  const params = isObject(message.params) ? message.params : {};
  const responses = isObject(params.inputResponses) ? params.inputResponses : {};
  const instance = instanceOf(request, record);
  for (const [key, value] of Object.entries(responses)) {
    // Keys the task did not ask (or asked of another task) are ignored, as servers should.
    const route = await deps.store.takeServerRequest(key);
    if (!route || route.handle !== record.handle || !isObject(value)) continue;
    const status = await answerInSession(request, instance, sessionOf(record), route.upstreamId, value).catch(() => 0);
    ctx.count(request, 'tasks/update', status >= 200 && status < 300 ? 'ok' : 'error');
  }
  await deps.store.invalidatePoll(record.handle);
  return ACK(message);
}

export async function answerModernCancel(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
  if (!isTerminalStatus(record.status)) {
    const instance = instanceOf(request, record);
    const answer = await inSession(ctx, request, instance, record, 'tasks/cancel', { taskId: record.upstreamTaskId }).catch(() => undefined);
    const fields = LEGACY_WIRE.readTask(answer?.response?.result);
    if (fields?.status === 'cancelled') {
      const updated = { ...record, ...nextState(deps.policy, record, fields) };
      await learn(deps, record, { patch: diff(record, updated), updated });
      request.statusSeen = 'cancelled';
    }
    ctx.count(request, 'tasks/cancel', fields ? 'ok' : 'error');
  }
  await deps.store.invalidatePoll(record.handle);
  return ACK(message);
}

async function inSession(ctx: BridgeContext, request: TaskRequest, instance: Instance, record: TaskRecord, method: string, params: JsonObject): Promise<RpcAnswer> {
  try {
    return await callInSession(request, instance, sessionOf(record), method, params);
  } catch (error) {
    ctx.count(request, method, 'error');
    throw upstreamFailure(error);
  }
}

/** The backend no longer knows the task (its session, or the task, is gone): it ends failed. */
function lostTask(deps: StageDeps, record: TaskRecord): { detailed: JsonObject; updated: TaskRecord } {
  const statusMessage = LOST_MESSAGE.slice(0, deps.policy.statusMessageMaxLength);
  return { detailed: { error: { code: -32603, message: LOST_MESSAGE } }, updated: { ...record, status: 'failed', statusMessage, lastUpdatedAtIso: new Date().toISOString() } };
}

function sessionOf(record: TaskRecord): { id?: string; version: string } {
  return { id: record.upstreamSession, version: record.protocolVersion ?? '2025-11-25' };
}

function instanceOf(request: TaskRequest, record: TaskRecord): Instance {
  const instance = request.route.pool.findInstance(record.instance);
  if (!instance) throw new GatewayError('TG_ERR_UPSTREAM_UNAVAILABLE', { detail: 'the instance holding the task is gone' });
  return instance;
}

function diff(before: TaskRecord, after: TaskRecord): Partial<TaskRecord> {
  const patch: Record<string, unknown> = {};
  for (const key of ['status', 'statusMessage', 'lastUpdatedAtIso', 'ttlMs', 'expiresAt', 'pollIntervalMs'] as const) {
    if (before[key] !== after[key]) patch[key] = after[key];
  }
  return patch as Partial<TaskRecord>;
}
