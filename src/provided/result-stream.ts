/**
 * 2025-11-25 tasks/result of a task the gateway runs itself: what the tools/call would have
 * answered (the result with the related-task _meta, or the backend's JSON-RPC error), blocking
 * until the task ends. Meanwhile the backend's questions (elicitation, sampling) reach the
 * client on this stream, as the spec says a receiver delivers them, each once per stream;
 * the client's answers come back on their own POSTs. Any replica can serve it: the stream
 * reads the task from the store whenever a replica announces a change, and every few seconds
 * anyway (announcements are best effort).
 */
import { PassThrough } from 'node:stream';
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError, renderErrorBody } from '../errors.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import { serializeSseEvent } from '../mcp/sse-tap.js';
import type { JsonObject, ProvidedTaskView } from '../task-model/provided-state.js';
import { isTerminalStatus } from '../task-model/task-record.js';
import type { LocalAnswer, TaskDeps } from '../tasks/task-context.js';
import { isObject } from '../mcp/json.js';
import { RELATED_TASK } from './task-driver.js';

/** The stream reads the task at least this often, whatever it hears. */
const RECHECK_MS = 2000;
/** A comment this often keeps intermediaries from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

export async function answerLegacyResult(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, handle: string): Promise<LocalAnswer> {
  const first = await deps.store.readProvidedTask(handle);
  if (!first) throw new GatewayError('TG_ERR_TASK_NOT_FOUND');
  if (isTerminalStatus(first.record.status)) {
    request.statusSeen = first.record.status;
    const body = finalAnswer(message, first);
    await forgetIfReadOnce(deps, first);
    return { status: 200, body };
  }
  return { status: 200, body: streamUntilEnded(deps, request, message, handle), contentType: 'text/event-stream', headers: { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' } };
}

function streamUntilEnded(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, handle: string): PassThrough {
  const stream = new PassThrough();
  const sent = new Set<unknown>();
  let done = false;
  let running: Promise<void> = Promise.resolve();
  let ticks = 0;
  const send = (value: unknown) => stream.write(serializeSseEvent({ event: 'message', data: JSON.stringify(value) }));
  const finish = () => {
    if (done) return;
    done = true;
    clearInterval(timer);
    unsubscribe();
    stream.end();
  };
  const step = async () => {
    if (done) return;
    const view = await deps.store.readProvidedTask(handle);
    if (done) return;
    if (!view) {
      // Expired (or delivered to a read-once reader elsewhere) while the client waited.
      send(renderErrorBody(new GatewayError('TG_ERR_TASK_NOT_FOUND'), message.id));
      finish();
      return;
    }
    for (const pending of view.state.pendingRequests ?? []) {
      if (sent.has(pending.id)) continue;
      sent.add(pending.id);
      send(pending);
    }
    if (!isTerminalStatus(view.record.status)) return;
    request.statusSeen = view.record.status;
    send(finalAnswer(message, view));
    finish();
    await forgetIfReadOnce(deps, view);
  };
  // One read at a time, in order: a burst of announcements queues at most one more read.
  let queued = false;
  const schedule = () => {
    if (queued || done) return;
    queued = true;
    running = running.then(() => {
      queued = false;
      return step();
    }).catch((error: unknown) => {
      request.log.warn({ err: error }, 'a tasks/result stream could not read its task; trying again');
    });
  };
  const unsubscribe = deps.store.events.subscribe(handle, schedule);
  const timer = setInterval(() => {
    if (++ticks % Math.round(KEEPALIVE_MS / RECHECK_MS) === 0 && !done) stream.write(': keepalive\n\n');
    schedule();
  }, RECHECK_MS);
  timer.unref();
  stream.once('close', finish);
  request.abort.once('abort', finish);
  schedule();
  return stream;
}

/** What the tools/call would have answered, with the task named in its related-task _meta. */
function finalAnswer(message: JsonRpcRequest, { record, state }: ProvidedTaskView): unknown {
  const outcome = state.outcome;
  if (record.status === 'cancelled' || !outcome) return renderErrorBody(new GatewayError('TG_ERR_TASK_CANCELLED'), message.id);
  if ('error' in outcome) return { jsonrpc: '2.0', id: message.id, error: outcome.error };
  const meta: JsonObject = isObject(outcome.result._meta) ? { ...outcome.result._meta } : {};
  meta[RELATED_TASK] = { taskId: record.handle };
  return { jsonrpc: '2.0', id: message.id, result: { ...outcome.result, _meta: meta } };
}

async function forgetIfReadOnce(deps: TaskDeps, { record }: ProvidedTaskView): Promise<void> {
  if (!record.readOnce) return;
  await deps.store.deleteTask(record.handle);
  deps.observer.forgotten(record, 'read_once');
}
