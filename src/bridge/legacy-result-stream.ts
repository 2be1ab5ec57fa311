/**
 * 2025-11-25 tasks/result of a bridged task: what the tools/call would have answered (the
 * result with the related-task `_meta`, or the JSON-RPC error), blocking until the task ends.
 * The gateway polls the 2026-07-28 backend meanwhile, at the task's interval, on this stream's
 * replica. The backend's `inputRequests` reach the client on this stream as server requests
 * (elicitation/create, …) under ids of the gateway's, once per stream and key, with the handle
 * in their related-task `_meta`; the client's responses come back on their own POSTs and go
 * to the backend as tasks/update (client-answers.ts).
 */
import { PassThrough } from 'node:stream';
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError, renderErrorBody, toWireError } from '../errors.js';
import { RELATED_TASK_META } from '../mcp/era.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import { serializeSseEvent } from '../mcp/sse-tap.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import { hideBackendId } from '../task-model/backend-ids.js';
import { jsonRpcErrorOf } from '../task-model/task-wire.js';
import type { LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import { mintServerRequestId } from '../tasks/handle.js';
import { SERVER_REQUEST_TTL_MS } from '../tasks/task-context.js';
import { learn, LOST_MESSAGE, pollBackend, type BackendView } from './backend-poll.js';
import type { BridgeContext } from './bridge-context.js';
import { withoutResultType } from './legacy-creation.js';

const KEEPALIVE_MS = 15_000;
/** The backend is asked at least this far apart, whatever interval it asks for. */
const MIN_POLL_MS = 100;

export async function answerLegacyResult(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
  if (record.status === 'cancelled') return { status: 200, body: finalAnswer(message, record, undefined) };
  const view = await pollBackend(ctx, deps, request, record);
  await learn(deps, record, view);
  if (isTerminalStatus(view.updated.status)) {
    return { status: 200, body: await deliver(ctx, deps, request, message, view) };
  }
  return {
    status: 200,
    body: streamUntilEnded(ctx, deps, request, message, view),
    contentType: 'text/event-stream',
    headers: { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' },
  };
}

function streamUntilEnded(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, first: BackendView): PassThrough {
  const stream = new PassThrough();
  const asked = new Set<string>();
  let done = false;
  let timer: NodeJS.Timeout | undefined;
  let record = first.updated;
  const write = (text: string) => {
    if (!done) stream.write(text);
  };
  const send = (value: unknown) => write(serializeSseEvent({ event: 'message', data: JSON.stringify(value) }));
  const keepalive = setInterval(() => write(': keepalive\n\n'), KEEPALIVE_MS);
  keepalive.unref();
  const finish = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    clearInterval(keepalive);
    unsubscribe();
    stream.end();
  };
  const step = async (view: BackendView): Promise<void> => {
    if (done) return;
    record = view.updated;
    if (isTerminalStatus(record.status)) {
      send(await deliver(ctx, deps, request, message, view));
      finish();
      return;
    }
    await relayQuestions(ctx, deps, record, view.detailed, asked, send);
    schedule(Math.max(MIN_POLL_MS, record.pollIntervalMs));
  };
  const next = async (): Promise<void> => {
    const now = await deps.store.getTask(record.handle);
    if (!now) {
      send(renderErrorBody(new GatewayError('TG_ERR_TASK_NOT_FOUND'), message.id));
      finish();
      return;
    }
    // Cancelled through another request meanwhile: the record is the truth, not the backend.
    if (now.status === 'cancelled') return step({ patch: {}, updated: now });
    const view = await pollBackend(ctx, deps, request, now);
    await learn(deps, now, view);
    await step(view);
  };
  const schedule = (ms: number) => {
    clearTimeout(timer);
    if (done) return;
    timer = setTimeout(() => {
      next().catch((error: unknown) => {
        request.log.warn({ err: toWireError(error)?.code ?? error }, 'a bridged tasks/result could not reach the backend; trying again');
        schedule(Math.max(1000, record.pollIntervalMs));
      });
    }, ms);
    timer.unref();
  };
  // A cancel (any replica) is heard at once rather than at the next poll.
  const unsubscribe = deps.store.events.subscribe(record.handle, () => schedule(0));
  stream.once('close', finish);
  request.abort.once('abort', finish);
  step(first).catch(() => schedule(1000));
  return stream;
}

/** Each question the backend asks, once per stream, as a legacy server request. */
async function relayQuestions(ctx: BridgeContext, deps: StageDeps, record: TaskRecord, detailed: JsonObject | undefined, asked: Set<string>, send: (value: unknown) => void): Promise<void> {
  const requests = detailed?.status === 'input_required' && isObject(detailed.inputRequests) ? detailed.inputRequests : {};
  for (const [key, question] of Object.entries(requests)) {
    if (asked.has(key) || !isObject(question) || typeof question.method !== 'string') continue;
    asked.add(key);
    const id = mintServerRequestId();
    await deps.store.putServerRequest(id, { upstream: record.upstream, instance: record.instance, upstreamId: key, handle: record.handle, inputKey: key }, SERVER_REQUEST_TTL_MS);
    const params = isObject(question.params) ? question.params : {};
    const meta = isObject(params._meta) ? params._meta : {};
    send({ jsonrpc: '2.0', id, method: question.method, params: { ...params, _meta: { ...meta, [RELATED_TASK_META]: { taskId: record.handle } } } });
    ctx.logger.debug({ upstream: record.upstream, method: question.method }, 'a bridged task\'s question relayed to its 2025 client');
  }
}

/** The final answer, counted; a read-once task is forgotten once it went out. */
async function deliver(ctx: BridgeContext, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, view: BackendView): Promise<unknown> {
  request.statusSeen = view.updated.status;
  ctx.count(request, 'tasks/result', 'ok');
  const answer = finalAnswer(message, view.updated, view.detailed);
  if (view.updated.readOnce) {
    await deps.store.deleteTask(view.updated.handle);
    deps.observer.forgotten(view.updated, 'read_once');
  }
  return answer;
}

/** What the tools/call would have answered, with the task named in its related-task _meta. */
function finalAnswer(message: JsonRpcRequest, record: TaskRecord, detailed: JsonObject | undefined): unknown {
  if (record.status === 'cancelled') return renderErrorBody(new GatewayError('TG_ERR_TASK_CANCELLED'), message.id);
  if (detailed === undefined) return { jsonrpc: '2.0', id: message.id, error: { code: -32603, message: LOST_MESSAGE } };
  if (detailed.status === 'completed' && isObject(detailed.result)) {
    const result = withoutResultType(detailed.result);
    const meta: JsonObject = isObject(result._meta) ? { ...result._meta } : {};
    meta[RELATED_TASK_META] = { taskId: record.handle };
    result._meta = meta;
    hideBackendId(result, record, 'meta');
    return { jsonrpc: '2.0', id: message.id, result };
  }
  const error = jsonRpcErrorOf(detailed.error);
  hideBackendId(error, record);
  return { jsonrpc: '2.0', id: message.id, error };
}
