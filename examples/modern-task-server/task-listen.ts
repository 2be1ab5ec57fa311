// `notifications.taskIds` on `subscriptions/listen` (the tasks extension's status push). The SDK's
// listen router knows only list-changed and resource events, so a listen that names tasks goes to
// the SDK without its taskIds (it validates the request, answers errors and serves the rest of the
// filter), and this file splices the task part into the SDK's stream: the ack gains the agreed
// taskIds, every status change of one of them becomes `notifications/tasks`, and the SDK's graceful
// `complete` is held until every agreed task is terminal.
import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import { createParser } from 'eventsource-parser';
import { isObject, metaDeclaresTasks, missingTasksCapability } from './task-handlers.js';
import { TERMINAL, type TaskRegistry, type TaskStatus } from './task-registry.js';

/** Beyond this many taskIds a listen is refused (-32602): nothing a client sends grows memory unbounded. */
export const MAX_LISTEN_TASK_IDS = 1000;
/** Frames a listener may have unread before it is cut off (without `complete`: it was too slow). */
const MAX_QUEUED_FRAMES = 1024;

interface ListenMessage {
  id: string | number;
  params: { _meta?: unknown; notifications: Record<string, unknown> };
}

export interface TaskListenOptions {
  /** true: agree to known taskIds and push their changes; false: acknowledge without taskIds. */
  push: boolean;
}

export class TaskListen {
  readonly #registry: TaskRegistry;
  readonly #push: boolean;
  #open = 0;

  constructor(registry: TaskRegistry, opts: TaskListenOptions) {
    this.#registry = registry;
    this.#push = opts.push;
  }

  /** Listen streams carrying taskIds that are open now. */
  get open(): number {
    return this.#open;
  }

  /** The message when `body` is a subscriptions/listen whose filter names `taskIds`, else undefined. */
  static match(body: unknown): ListenMessage | undefined {
    if (!isObject(body) || body.method !== 'subscriptions/listen') return undefined;
    if (typeof body.id !== 'string' && typeof body.id !== 'number') return undefined;
    const params = body.params;
    if (!isObject(params) || !isObject(params.notifications) || !('taskIds' in params.notifications)) return undefined;
    return body as unknown as ListenMessage;
  }

  /** The body the SDK gets: the same listen without taskIds. */
  static stripped(message: ListenMessage): string {
    const { taskIds: _taskIds, ...notifications } = message.params.notifications;
    return JSON.stringify({ ...message, params: { ...message.params, notifications } });
  }

  /** `upstream` is the SDK's answer to the stripped listen; an error answer is returned as it is. */
  serve(message: ListenMessage, upstream: Response): Response {
    const taskIds = message.params.notifications.taskIds;
    if (!isSse(upstream)) return upstream;
    if (!metaDeclaresTasks(message.params._meta)) {
      void upstream.body?.cancel();
      const error = missingTasksCapability('subscriptions/listen with taskIds');
      return rpcError(message.id, 400, error.code, error.message, error.data);
    }
    if (!Array.isArray(taskIds) || taskIds.length > MAX_LISTEN_TASK_IDS || !taskIds.every((id) => typeof id === 'string')) {
      void upstream.body?.cancel();
      return rpcError(message.id, 400, -32602, `Invalid params: taskIds must be at most ${MAX_LISTEN_TASK_IDS} strings`);
    }
    const agreed = this.#push ? [...new Set(taskIds as string[])].filter((id) => this.#registry.has(id)) : [];
    if (agreed.length === 0 || upstream.body === null) return upstream;
    return new Response(this.#splice(message.id, agreed, upstream.body), { status: upstream.status, headers: upstream.headers });
  }

  #splice(subscriptionId: string | number, agreed: string[], upstream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    const registry = this.#registry;
    const live = new Set(agreed.filter((id) => !isTerminal(registry.detailed(id)?.status)));
    const encoder = new TextEncoder();
    const reader = upstream.getReader();
    let acknowledged = false;
    let heldComplete: string | undefined;
    let closed = false;
    let unsubscribe: (() => void) | undefined;

    const stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#open += 1;
          const write = (frame: string): void => {
            if (closed) return;
            if ((controller.desiredSize ?? 0) <= -MAX_QUEUED_FRAMES) return end(false);
            controller.enqueue(encoder.encode(frame));
          };
          const end = (graceful: boolean): void => {
            if (closed) return;
            if (graceful && heldComplete !== undefined) write(heldComplete);
            closed = true;
            this.#open -= 1;
            unsubscribe?.();
            void reader.cancel().catch(() => undefined);
            controller.close();
          };
          const settleIfDone = (): void => {
            if (acknowledged && live.size === 0 && heldComplete !== undefined) end(true);
          };
          const parser = createParser({
            onEvent: (event) => {
              const message = parse(event.data);
              if (!acknowledged && message?.method === 'notifications/subscriptions/acknowledged') {
                const params = message.params as { notifications?: Record<string, unknown> };
                params.notifications = { ...params.notifications, taskIds: agreed };
                write(frameOf(message, event.event));
                acknowledged = true;
                return settleIfDone();
              }
              // The SDK's graceful end: nothing else was asked (or it is closing); tasks may still run.
              if (message?.id === subscriptionId && 'result' in message) {
                heldComplete = frameOf(message, event.event);
                return settleIfDone();
              }
              write(`${event.event === undefined ? '' : `event: ${event.event}\n`}data: ${event.data}\n\n`);
            },
            onComment: (comment) => write(`:${comment}\n\n`),
          });
          unsubscribe = registry.onChange((taskId) => {
            if (!live.has(taskId)) return;
            const detailed = registry.detailed(taskId);
            if (detailed === undefined) live.delete(taskId);
            else {
              const meta = { [SUBSCRIPTION_ID_META_KEY]: subscriptionId };
              write(frameOf({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...detailed, _meta: meta } }, 'message'));
              if (isTerminal(detailed.status)) live.delete(taskId);
            }
            settleIfDone();
          });
          void (async () => {
            const decoder = new TextDecoder();
            for (;;) {
              const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
              if (chunk.done) break;
              parser.feed(decoder.decode(chunk.value, { stream: true }));
            }
            // The SDK closed without a complete (torn down): so does this stream.
            if (heldComplete === undefined) end(false);
          })();
        },
        cancel: () => {
          if (closed) return;
          closed = true;
          this.#open -= 1;
          unsubscribe?.();
          void reader.cancel().catch(() => undefined);
        },
      },
      { highWaterMark: 16 },
    );
    return stream;
  }
}

function isTerminal(status: unknown): boolean {
  return TERMINAL.has(status as TaskStatus);
}

function isSse(response: Response): boolean {
  return (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
}

function parse(data: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(data);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function frameOf(message: unknown, event: string | undefined): string {
  return `${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(message)}\n\n`;
}

function rpcError(id: string | number, status: number, code: number, message: string, data?: unknown): Response {
  const error = { code, message, ...(data === undefined ? {} : { data }) };
  return Response.json({ jsonrpc: '2.0', id, error }, { status });
}
