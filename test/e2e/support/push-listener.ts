/**
 * A raw 2026-07-28 subscriptions/listen client for the status-push tests: it POSTs the listen as
 * a 2026 client frames it and reads the event stream as it comes (eventsource-parser), keeping
 * every JSON-RPC message so a test can wait for one and assert on all of them.
 */
import { waitForValue } from '../../support/wait.js';
import { PROTOCOL_VERSION, TASKS_EXTENSION } from './modern-client.js';
import { readMessagesUntil } from './reply-messages.js';

export type Message = Record<string, unknown> & { method?: string; params?: Record<string, unknown>; id?: unknown; result?: Record<string, unknown> };

export interface Listener {
  readonly status: number;
  readonly contentType: string;
  readonly headers: Headers;
  /** Every message so far, in order. */
  readonly messages: Message[];
  /** The body when the answer was not an event stream. */
  readonly body?: Message;
  /** Resolves once the stream has ended (by the server, or close()). */
  readonly ended: Promise<void>;
  /** The first message (from the start) matching `test`; fails after `ms`. */
  waitFor(test: (m: Message) => boolean, ms?: number, what?: string): Promise<Message>;
  /** notifications/tasks for `taskId`, in order. */
  tasks(taskId: string): Record<string, unknown>[];
  /** Stops reading and closes the connection. */
  close(): void;
}

let nextId = 1000;

export async function listen(url: string, authorization: string, notifications: Record<string, unknown>, opts: { id?: number | string; declare?: boolean; read?: boolean } = {}): Promise<Listener> {
  const id = opts.id ?? nextId++;
  const caps = opts.declare === false ? {} : { extensions: { [TASKS_EXTENSION]: {} } };
  const body = {
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
        'io.modelcontextprotocol/clientInfo': { name: 'push-test', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': caps,
      },
      notifications,
    },
  };
  const abort = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL_VERSION,
      'mcp-method': 'subscriptions/listen',
      authorization,
    },
    body: JSON.stringify(body),
  });
  const contentType = response.headers.get('content-type') ?? '';
  const messages: Message[] = [];
  if (!contentType.startsWith('text/event-stream')) {
    const parsed = JSON.parse(await response.text()) as Message;
    return { status: response.status, contentType, headers: response.headers, messages, body: parsed, ended: Promise.resolve(), waitFor: () => Promise.reject(new Error('no stream')), tasks: () => [], close: () => undefined };
  }
  let ended: Promise<void>;
  if (opts.read === false) {
    // Left unread (a slow listener) until close(), but locked all the same: fetch cancels the
    // unlocked body of a Response it has garbage-collected, which would close the connection
    // and turn the slow listener into one that went away.
    response.body!.getReader();
    ended = new Promise<void>((resolve) => abort.signal.addEventListener('abort', () => resolve()));
  } else {
    // Ends when the server ends the stream, or once aborted or cut off by the gateway.
    ended = readMessagesUntil(response, () => false, messages).then(
      () => undefined,
      () => undefined,
    );
  }
  return {
    status: response.status,
    contentType,
    headers: response.headers,
    messages,
    ended,
    waitFor: (test, ms = 8000, what = 'a message') => waitForValue(() => messages.find(test), () => `${what}; got ${JSON.stringify(messages).slice(0, 2000)}`, ms),
    tasks: (taskId) => messages.filter((m) => m.method === 'notifications/tasks' && m.params?.taskId === taskId).map((m) => m.params!),
    close: () => abort.abort(),
  };
}

/** A notifications/tasks of `taskId` in `status`. */
export const taskIn = (taskId: string, status: string) => (m: Message) => m.method === 'notifications/tasks' && m.params?.taskId === taskId && m.params?.status === status;
