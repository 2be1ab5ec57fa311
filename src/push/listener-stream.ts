/**
 * One listener's event stream (a 2026-07-28 subscriptions/listen the gateway answers itself):
 * every message framed as SSE and tagged with the subscription id, written through a buffer
 * that never grows past `maxBufferBytes`. What the connection has not taken yet sits in the
 * PassThrough (fastify pipes it into the response with backpressure, so the socket side holds
 * at most its own high-water mark); a listener that leaves more than the limit unread is cut
 * off rather than allowed to grow the gateway's memory, and whatever would have been written
 * is counted as dropped.
 */
import { PassThrough } from 'node:stream';
import type { JsonRpcId } from '../errors.js';
import { serializeSseEvent } from '../mcp/sse-tap.js';
import type { JsonObject } from '../tasks/task-shapes.js';

export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
/** A comment this often keeps intermediaries from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

export type DropReason = 'slow_listener' | 'closed';

export interface ListenerStreamOptions {
  readonly subscriptionId: JsonRpcId;
  readonly maxBufferBytes: number;
  /** A message that was not written, and why. */
  onDrop(reason: DropReason): void;
  /** The stream is over, whatever ended it (called once). */
  onClose(): void;
}

export class ListenerStream {
  readonly body = new PassThrough();
  private readonly options: ListenerStreamOptions;
  private readonly keepalive: NodeJS.Timeout;
  private closed = false;

  constructor(options: ListenerStreamOptions) {
    this.options = options;
    this.keepalive = setInterval(() => this.write(': keepalive\n\n', false), KEEPALIVE_MS);
    this.keepalive.unref();
    this.body.once('close', () => this.close());
    // A destroyed stream (a cut-off) must not bring anything down: fastify ends the response.
    this.body.on('error', () => undefined);
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  /** A notification with the subscription id in its _meta; false when it was dropped. */
  notify(method: string, params: JsonObject): boolean {
    const meta = typeof params._meta === 'object' && params._meta !== null ? params._meta : {};
    const tagged = { ...params, _meta: { ...meta, [SUBSCRIPTION_ID]: this.options.subscriptionId } };
    return this.write(serializeSseEvent({ event: 'message', data: JSON.stringify({ jsonrpc: '2.0', method, params: tagged }) }));
  }

  /** Ends the subscription gracefully: the listen request's response, then the end of the stream. */
  complete(): void {
    if (this.closed) return;
    const result = { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: this.options.subscriptionId } };
    this.write(serializeSseEvent({ event: 'message', data: JSON.stringify({ jsonrpc: '2.0', id: this.options.subscriptionId, result }) }));
    this.body.end();
    this.close();
  }

  /** Ends the stream without a response (the gateway is closing, or the listener was cut off). */
  abort(): void {
    if (this.closed) return;
    this.body.destroy(new Error('listener stream ended by the gateway'));
    this.close();
  }

  /** `counted`: a message (a drop is counted), not a keep-alive comment. */
  private write(text: string, counted = true): boolean {
    if (this.closed) {
      if (counted) this.options.onDrop('closed');
      return false;
    }
    const held = this.body.readableLength + this.body.writableLength;
    if (held + Buffer.byteLength(text) > this.options.maxBufferBytes) {
      if (counted) this.options.onDrop('slow_listener');
      this.abort();
      return false;
    }
    this.body.write(text);
    return true;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepalive);
    this.options.onClose();
  }
}
