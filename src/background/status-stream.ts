/**
 * 2025-11-25: a status call of a background call whose backend asked the client something
 * (elicitation, sampling) is answered as an event stream: first the backend's questions, as
 * the server requests they are (gateway ids, the handle in their related-task _meta), each
 * once per stream; then, once the call has ended or the status call's wait has run out, the
 * status tool's answer. The client answers each question on a POST of its own, which the
 * tasks stage routes back to the backend's call (task-requests.ts, routeClientResponse), on
 * whichever replica holds it. Any replica can serve the stream: it reads the task whenever a
 * change is announced, and every few seconds anyway.
 */
import { PassThrough } from 'node:stream';
import type { TaskRequest } from '../tasks/task-request.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import { serializeSseEvent } from '../mcp/sse-tap.js';
import type { Store } from '../store/store.js';
import type { ProvidedTaskView } from '../task-model/provided-state.js';
import { isTerminalStatus } from '../task-model/task-record.js';
import type { LocalAnswer } from '../tasks/extension-points.js';
import type { ToolResult } from './model-texts.js';

const RECHECK_MS = 2000;

/** The status tool's answer for the task as it is at the end (undefined: it is gone). */
export type ComposeAnswer = (view: ProvidedTaskView | undefined) => Promise<ToolResult>;

export function hasQuestions(view: ProvidedTaskView): boolean {
  return view.record.status === 'input_required' && (view.state.pendingRequests?.length ?? 0) > 0;
}

export function streamStatus(store: Store, request: TaskRequest, message: JsonRpcRequest, handle: string, until: number, compose: ComposeAnswer): LocalAnswer {
  const stream = new PassThrough();
  const sent = new Set<unknown>();
  let done = false;
  let queued = false;
  let running: Promise<void> = Promise.resolve();
  const send = (value: unknown) => stream.write(serializeSseEvent({ event: 'message', data: JSON.stringify(value) }));
  const finish = () => {
    if (done) return;
    done = true;
    clearInterval(timer);
    clearTimeout(deadline);
    unsubscribe();
    stream.end();
  };
  const answer = async (view: ProvidedTaskView | undefined) => {
    const result = await compose(view);
    if (done) return;
    send({ jsonrpc: '2.0', id: message.id, result });
    finish();
  };
  const step = async (final: boolean) => {
    if (done) return;
    const view = await store.readProvidedTask(handle);
    if (done) return;
    if (!view) return answer(undefined);
    for (const pending of view.state.pendingRequests ?? []) {
      if (sent.has(pending.id)) continue;
      sent.add(pending.id);
      send(pending);
    }
    if (final || isTerminalStatus(view.record.status)) await answer(view);
  };
  // One read at a time, in order: a burst of announcements queues at most one more read.
  const schedule = (final = false) => {
    if (done || (queued && !final)) return;
    queued = true;
    running = running
      .then(() => {
        queued = false;
        return step(final);
      })
      .catch((error: unknown) => {
        request.log.warn({ err: error }, 'a background call\'s status stream could not read its task');
        if (final) finish();
      });
  };
  const unsubscribe = store.events.subscribe(handle, () => schedule());
  const timer = setInterval(() => schedule(), RECHECK_MS);
  timer.unref();
  const deadline = setTimeout(() => schedule(true), Math.max(0, until - Date.now()));
  deadline.unref();
  stream.once('close', finish);
  request.abort.once('abort', finish);
  schedule();
  return { status: 200, body: stream, contentType: 'text/event-stream', headers: { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' } };
}
