/**
 * One listener of the status-push measurement (bench/push.ts): a real HTTP client (an undici
 * Client of its own, so one connection per listener, as separate clients would have) holding
 * one 2026-07-28 `subscriptions/listen` naming its principal's tasks, read with
 * eventsource-parser as the bytes come.
 *
 * Delivery lag of each completion: from the moment the backend answered the task's call (the
 * wall-clock stamp in the result's text, bench/backend.ts `stamp`) to the moment the chunk
 * carrying its notifications/tasks reached this client (wall clock of the same host, taken
 * when the chunk arrives, before it is parsed).
 */
import { createParser } from 'eventsource-parser';
import { Client } from 'undici';
import { rpcRequest } from './scenarios.js';

const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';
const STAMP = /slow call done at ([\d.]+)/;
const MAX_RETRIES = 3;

/** Wall clock in ms with sub-millisecond digits, comparable across processes of one host. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Waited on later (or never, when the run stops early): no unhandled rejection meanwhile.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export class PushListener {
  /** Handles the gateway acknowledged. */
  granted: string[] = [];
  /** Lag in ms of each completion received (one per task). */
  readonly lagsMs: number[] = [];
  /** Tasks whose first state (working) arrived after the acknowledgement. */
  private readonly seenWorking = new Set<string>();
  private readonly completed = new Set<string>();
  private readonly failed = new Set<string>();
  /** notifications/tasks of a completed task without a readable stamp (should be 0). */
  unstamped = 0;
  /** Tasks that ended otherwise (failed, cancelled), by status, and the last status message seen. */
  readonly otherEnds = new Map<string, number>();
  lastOtherMessage: string | undefined;
  /** Listens answered 503 and sent again. */
  retries = 0;
  /** The stream ended with the listen's response (every task ended, nothing else asked for). */
  endedCleanly = false;
  private readonly client: Client;
  private readonly ready = deferred();
  private readonly done = deferred();
  private expected = 0;

  constructor(private readonly url: URL, private readonly token: string, private readonly handles: string[], private readonly id: number) {
    this.client = new Client(url.origin, { bodyTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 60_000 });
  }

  /** Sends the listen; resolves once the acknowledgement and every task's first state arrived. */
  async open(timeoutMs: number): Promise<void> {
    const spec = rpcRequest('2026-07-28', this.token, 'subscriptions/listen', { notifications: { taskIds: this.handles } });
    const body = JSON.parse(spec.body) as { id: number };
    body.id = this.id;
    let res = await this.client.request({ path: this.url.pathname, method: 'POST', headers: spec.headers, body: JSON.stringify(body) });
    // A 503 (the store did not answer in time) is retried after a pause, as a client would, and counted.
    while (res.statusCode === 503 && this.retries < MAX_RETRIES) {
      await res.body.text();
      this.retries++;
      await new Promise((resolve) => setTimeout(resolve, 500));
      res = await this.client.request({ path: this.url.pathname, method: 'POST', headers: spec.headers, body: JSON.stringify(body) });
    }
    const type = String(res.headers['content-type'] ?? '');
    if (res.statusCode !== 200 || !type.startsWith('text/event-stream')) {
      const text = await res.body.text();
      throw new Error(`subscriptions/listen answered ${res.statusCode} ${type}: ${text.slice(0, 300)}`);
    }
    let arrivedAt = 0;
    const parser = createParser({ onEvent: (event) => event.data !== '' && this.onMessage(JSON.parse(event.data) as Message, arrivedAt) });
    // undici's body ignores setEncoding: bytes decoded here, a character split across chunks kept.
    const decoder = new TextDecoder();
    res.body.on('data', (chunk: Buffer) => {
      arrivedAt = wallClockMs();
      parser.feed(decoder.decode(chunk, { stream: true }));
    });
    res.body.on('end', () => {
      const error = new Error(`stream ended with ${this.ended} of ${this.expected} tasks ended`);
      this.ready.reject(error);
      this.done.reject(error);
    });
    res.body.on('error', (error: Error) => {
      this.ready.reject(error);
      this.done.reject(error);
    });
    await withTimeout(this.ready.promise, timeoutMs, () => `listener ${this.id}: acknowledged ${this.granted.length} handles, ${this.seenWorking.size} first states`);
  }

  /** Resolves once every granted task's end arrived (a completion, or a failure the listener counts). */
  completions(timeoutMs: number): Promise<void> {
    return withTimeout(this.done.promise, timeoutMs, () => `listener ${this.id}: ${this.ended} of ${this.expected} tasks ended`);
  }

  get received(): number {
    return this.completed.size;
  }

  async close(): Promise<void> {
    await this.client.destroy().catch(() => undefined);
  }

  private onMessage(message: Message, arrivedAt: number): void {
    if (message.method === ACKNOWLEDGED) {
      const ids = message.params?.notifications?.taskIds;
      this.granted = Array.isArray(ids) ? ids.map(String) : [];
      this.expected = this.granted.length;
      if (this.expected === 0) this.ready.resolve();
      return;
    }
    if (message.id !== undefined && message.result) {
      this.endedCleanly = this.ended === this.expected;
      return;
    }
    if (message.method !== 'notifications/tasks' || !message.params) return;
    const { taskId, status } = message.params;
    if (typeof taskId !== 'string') return;
    if (status === 'working') {
      this.seenWorking.add(taskId);
      if (this.seenWorking.size === this.expected) this.ready.resolve();
      return;
    }
    if (status !== 'completed' && status !== 'failed' && status !== 'cancelled') return;
    if (this.completed.has(taskId) || this.failed.has(taskId)) return;
    if (status !== 'completed') {
      this.failed.add(taskId);
      this.otherEnds.set(status, (this.otherEnds.get(status) ?? 0) + 1);
      if (typeof message.params.statusMessage === 'string') this.lastOtherMessage = message.params.statusMessage;
      if (this.ended === this.expected) this.done.resolve();
      return;
    }
    this.completed.add(taskId);
    const stamp = STAMP.exec(message.params.result?.content?.[0]?.text ?? '')?.[1];
    if (stamp === undefined) this.unstamped++;
    else this.lagsMs.push(arrivedAt - Number(stamp));
    if (this.ended === this.expected) this.done.resolve();
  }

  /** Granted handles whose end has not arrived. */
  pending(): string[] {
    return this.granted.filter((h) => !this.completed.has(h) && !this.failed.has(h));
  }

  /** Tasks whose end arrived, however they ended. */
  private get ended(): number {
    return this.completed.size + this.failed.size;
  }
}

interface Message {
  id?: unknown;
  method?: string;
  result?: unknown;
  params?: {
    taskId?: unknown;
    status?: unknown;
    statusMessage?: unknown;
    notifications?: { taskIds?: unknown };
    result?: { content?: { text?: string }[] };
  };
}

async function withTimeout(promise: Promise<void>, ms: number, what: () => string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what()}`)), ms);
  });
  try {
    await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
