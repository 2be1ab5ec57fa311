/**
 * The SSE tap: sits in an upstream `text/event-stream` reply, shows every JSON-RPC message to a
 * hook, and re-emits the stream event by event. Parsing is eventsource-parser's; this file only
 * re-serializes what it reports. (A stream the gateway reads for itself, without relaying it,
 * is read by event-stream.ts, with the same decoding and event bound.)
 *
 * What a client sees afterwards equals what it would have parsed from the upstream bytes:
 * - each complete event is written back as one block (`id:`, `event:`, one `data:` line per
 *   data line, blank line); an empty-data event (the resumability priming event `id: X` +
 *   `data:`) is an event like any other;
 * - comments (`: keepalive`) and `retry:` are written at once as blocks of their own; they
 *   never belong to an event, and nothing is half-written downstream when they are;
 * - lines the SSE rules ignore (unknown fields, a non-numeric retry) are dropped, as is an
 *   event cut off by the end of the stream;
 * - eventsource-parser, like the WHATWG parser, dispatches nothing for a block without a
 *   `data:` line, so an `id:`-only block is not relayed.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { TextDecoder } from 'node:util';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import { GatewayError } from '../errors.js';
import { exceedsEventBytes } from './event-stream.js';
import type { McpMessage } from './jsonrpc.js';
import { rewriteJsonRpcText, type MessageRewrite } from './json-reply.js';

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  retry?: number;
}

export interface SseTapOptions {
  /** Awaited per message, in stream order; the next event waits for it. */
  onMessage: (message: McpMessage, event: SseEvent) => Promise<MessageRewrite>;
  /**
   * The most an event may hold, in UTF-8 bytes of its data, id and type. eventsource-parser
   * enforces it on what it buffers between chunks (the unfinished line plus the event's data
   * so far, in UTF-16 code units: never more than the bytes, so an event within the limit
   * always fits). An event that arrives whole inside one chunk never passes through that
   * buffer, so each complete event is measured here too.
   */
  maxEventBytes: number;
}

type Item =
  | { kind: 'event'; event: EventSourceMessage }
  | { kind: 'comment'; text: string }
  | { kind: 'retry'; ms: number };

const LINE_BREAK = /\r\n|[\r\n]/;

function checkFieldValue(name: string, value: string): void {
  if (LINE_BREAK.test(value)) throw new TypeError(`SSE ${name} cannot contain a line break`);
}

/** One SSE block, ending in the blank line that dispatches it. */
export function serializeSseEvent(event: SseEvent): string {
  let out = '';
  if (event.id !== undefined) {
    checkFieldValue('id', event.id);
    out += event.id === '' ? 'id:\n' : `id: ${event.id}\n`;
  }
  if (event.event !== undefined) {
    checkFieldValue('event', event.event);
    out += `event: ${event.event}\n`;
  }
  if (event.retry !== undefined) {
    if (!Number.isSafeInteger(event.retry) || event.retry < 0) {
      throw new TypeError('SSE retry must be a non-negative integer');
    }
    out += `retry: ${event.retry}\n`;
  }
  // One space after the colon always: the parser strips exactly one, so data that starts
  // with a space keeps it.
  for (const line of event.data.split(LINE_BREAK)) out += line === '' ? 'data:\n' : `data: ${line}\n`;
  return `${out}\n`;
}

function serializeComment(text: string): string {
  return text === '' ? ':\n\n' : `: ${text}\n\n`;
}

class SseTap extends Transform {
  readonly #onMessage: SseTapOptions['onMessage'];
  /**
   * TextDecoder, not StringDecoder: it drops a leading BOM as the SSE rules ask, which
   * eventsource-parser only does for a BOM fed as three Latin-1 characters.
   */
  readonly #decoder = new TextDecoder('utf-8');
  readonly #parser: EventSourceParser;
  /** Filled synchronously by the parser during feed(), emptied by #drain(). */
  #items: Item[] = [];
  #overflow = false;
  #endsWithCr = false;

  constructor(options: SseTapOptions) {
    super();
    if (!Number.isSafeInteger(options.maxEventBytes) || options.maxEventBytes <= 0) {
      throw new TypeError('maxEventBytes must be a positive integer');
    }
    this.#onMessage = options.onMessage;
    this.#parser = createParser({
      maxBufferSize: options.maxEventBytes,
      onEvent: (event) => {
        if (this.#overflow) return;
        if (exceedsEventBytes(event, options.maxEventBytes)) this.#overflow = true;
        else this.#items.push({ kind: 'event', event });
      },
      onComment: (text) => this.#items.push({ kind: 'comment', text }),
      onRetry: (ms) => this.#items.push({ kind: 'retry', ms }),
      onError: (error) => {
        // invalid-retry and unknown-field are lines the SSE rules ignore: dropping them is
        // faithful. Only the buffer limit is fatal.
        if (error.type === 'max-buffer-size-exceeded') this.#overflow = true;
      },
    });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#feed(this.#decoder.decode(chunk, { stream: true }), callback);
  }

  override _flush(callback: TransformCallback): void {
    let rest = this.#decoder.decode();
    // The parser holds back a final CR in case an LF follows; at the end it is a line end, and
    // the LF added here only makes it a CRLF. An unfinished event is still discarded, as an
    // SSE client would discard it.
    if ((rest === '' && this.#endsWithCr) || rest.endsWith('\r')) rest += '\n';
    this.#feed(rest, callback);
  }

  /** The callback waits for every hook: that is the backpressure on the upstream. */
  #feed(text: string, callback: TransformCallback): void {
    if (text !== '') {
      this.#endsWithCr = text.endsWith('\r');
      this.#parser.feed(text);
    }
    this.#drain().then(
      () => {
        if (this.#overflow) {
          callback(new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'an upstream SSE event exceeds the size limit' }));
        } else {
          callback();
        }
      },
      (error: unknown) => callback(error as Error),
    );
  }

  async #drain(): Promise<void> {
    while (this.#items.length > 0 && !this.destroyed) {
      const item = this.#items.shift() as Item;
      let out: string | null;
      if (item.kind === 'comment') out = serializeComment(item.text);
      else if (item.kind === 'retry') out = `retry: ${item.ms}\n\n`;
      else out = await this.#rewriteEvent(item.event);
      // Pushed one by one, so a client sees each event as soon as its hook is done.
      if (out !== null && !this.destroyed) this.push(Buffer.from(out, 'utf8'));
    }
  }

  /** The event's new bytes, or null when the hook dropped every message in it. */
  async #rewriteEvent(source: EventSourceMessage): Promise<string | null> {
    const event: SseEvent = { data: source.data };
    if (source.id !== undefined) event.id = source.id;
    if (source.event !== undefined) event.event = source.event;
    const data = await rewriteJsonRpcText(source.data, (message) => this.#onMessage(message, event));
    if (data === null) return null;
    return serializeSseEvent(data === undefined ? event : { ...event, data });
  }
}

/** A Transform from upstream SSE bytes to the bytes to relay; see the file comment. */
export function createSseTap(options: SseTapOptions): Transform {
  return new SseTap(options);
}
