/**
 * One listener's event stream (a 2026-07-28 subscriptions/listen the gateway answers itself):
 * every message framed as SSE and tagged with the subscription id.
 *
 * One message is in flight at a time, whatever its size: it is written into the PassThrough
 * (fastify pipes that into the response with backpressure) while the PassThrough is not full.
 * What arrives while it is full waits in this stream's queue, in order, and that queue (what is
 * queued beyond the message being delivered) is what `maxBufferBytes` bounds: past it, the
 * listener is cut off rather than allowed to grow the gateway's memory. So a result larger than
 * the buffer reaches a listener that reads, and one that does not read is still cut.
 *
 * Task notifications do not queue: a writer that can render its message again later (the task
 * subscription, from the store) asks `congested` first and waits with `whenWritable`, so a burst
 * of large results costs no memory and the listener gets each task's latest state as it reads.
 * Waiting costs nothing, so a listener that takes nothing for `stallMs` while something waits
 * for it (queued or deferred) is cut off too: that is what catches a listener that does not
 * read when nothing is queued. Whatever would have been written is counted as dropped.
 */
import { PassThrough } from 'node:stream';
import type { JsonRpcId } from '../errors.js';
import { serializeSseEvent } from '../mcp/sse-tap.js';
import type { JsonObject } from '../mcp/json.js';

export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
/** A comment this often keeps intermediaries from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

export type DropReason = 'slow_listener' | 'closed';

export interface ListenerStreamOptions {
  readonly subscriptionId: JsonRpcId;
  /** Most bytes queued behind the message in flight. */
  readonly maxBufferBytes: number;
  /** Longest the listener may take nothing while something waits for it. */
  readonly stallMs: number;
  /** A message that was not written, and why. */
  onDrop(reason: DropReason): void;
  /** The stream is over, whatever ended it (called once). */
  onClose(): void;
}

interface Queued {
  readonly text: string;
  readonly bytes: number;
}

export class ListenerStream {
  readonly body = new PassThrough();
  private readonly options: ListenerStreamOptions;
  private readonly keepalive: NodeJS.Timeout;
  private readonly queue: Queued[] = [];
  private queuedBytes = 0;
  /** Writers waiting for the stream to take a message again (task subscriptions). */
  private readonly waiting = new Set<() => void>();
  /** Runs while something waits and the listener has taken nothing since it was armed. */
  private stall: NodeJS.Timeout | undefined;
  /** No more messages are taken (complete() or a cut-off); the body may still be flushing. */
  private closed = false;
  /** complete(): the body ends once the queue is written. */
  private ending = false;

  constructor(options: ListenerStreamOptions) {
    this.options = options;
    this.keepalive = setInterval(() => {
      // A stream with something in flight is not quiet.
      if (!this.closed && !this.congested) this.body.write(': keepalive\n\n');
    }, KEEPALIVE_MS);
    this.keepalive.unref();
    this.body.on('drain', () => this.flush());
    this.body.once('close', () => {
      this.clearTimers();
      this.close();
    });
    // A destroyed stream (a cut-off) must not bring anything down: fastify ends the response.
    this.body.on('error', () => undefined);
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  /** Whether a message written now would wait behind the one in flight. */
  get congested(): boolean {
    return this.body.writableNeedDrain || this.queue.length > 0;
  }

  /**
   * Calls `resume` once the stream takes messages again (at once, on a later tick, when it does
   * already). Not called when the stream ends first.
   */
  whenWritable(resume: () => void): void {
    if (this.closed) return;
    if (!this.congested) {
      queueMicrotask(() => {
        if (!this.closed) resume();
      });
      return;
    }
    this.waiting.add(resume);
    this.armStall();
  }

  /** A notification with the subscription id in its _meta; false when it was dropped. */
  notify(method: string, params: JsonObject): boolean {
    const meta = typeof params._meta === 'object' && params._meta !== null ? params._meta : {};
    const tagged = { ...params, _meta: { ...meta, [SUBSCRIPTION_ID]: this.options.subscriptionId } };
    return this.write(serializeSseEvent({ event: 'message', data: JSON.stringify({ jsonrpc: '2.0', method, params: tagged }) }));
  }

  /**
   * Ends the subscription gracefully: the listen request's response, then the end of the
   * stream, once what is queued before it has been written.
   */
  complete(): void {
    if (this.closed) return;
    const result = { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: this.options.subscriptionId } };
    const text = serializeSseEvent({ event: 'message', data: JSON.stringify({ jsonrpc: '2.0', id: this.options.subscriptionId, result }) });
    // The response is small and the last message: it is never refused for the buffer.
    if (this.congested) this.enqueue(text);
    else this.body.write(text);
    this.ending = true;
    this.close();
    if (this.queue.length === 0) this.body.end();
  }

  /** Ends the stream without a response (the gateway is closing, or the listener was cut off). */
  abort(): void {
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.clearTimers();
    if (!this.body.destroyed) this.body.destroy(new Error('listener stream ended by the gateway'));
    this.close();
  }

  private write(text: string): boolean {
    if (this.closed) {
      this.options.onDrop('closed');
      return false;
    }
    if (!this.congested) {
      // The message in flight, whatever its size: the buffer bounds what waits behind it.
      this.body.write(text);
      return true;
    }
    if (this.queuedBytes + Buffer.byteLength(text) > this.options.maxBufferBytes) {
      this.cutOff();
      return false;
    }
    this.enqueue(text);
    return true;
  }

  private enqueue(text: string): void {
    const bytes = Buffer.byteLength(text);
    this.queue.push({ text, bytes });
    this.queuedBytes += bytes;
    this.armStall();
  }

  /** The PassThrough took what it held: the listener made progress. */
  private flush(): void {
    this.disarmStall();
    while (this.queue.length > 0 && !this.body.writableNeedDrain) {
      const next = this.queue.shift()!;
      this.queuedBytes -= next.bytes;
      this.body.write(next.text);
    }
    if (this.queue.length === 0 && this.ending) {
      this.body.end();
      return;
    }
    if (this.congested) {
      // The last write filled the PassThrough again: the next drain goes on.
      if (this.queue.length > 0 || this.waiting.size > 0) this.armStall();
      return;
    }
    const resumed = [...this.waiting];
    this.waiting.clear();
    for (const resume of resumed) if (!this.closed) resume();
  }

  private armStall(): void {
    if (this.stall || this.body.destroyed) return;
    this.stall = setTimeout(() => {
      this.stall = undefined;
      this.cutOff();
    }, this.options.stallMs);
    this.stall.unref();
  }

  private disarmStall(): void {
    clearTimeout(this.stall);
    this.stall = undefined;
  }

  private cutOff(): void {
    this.options.onDrop('slow_listener');
    this.abort();
  }

  private clearTimers(): void {
    clearInterval(this.keepalive);
    this.disarmStall();
    this.waiting.clear();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.waiting.clear();
    this.options.onClose();
  }
}
