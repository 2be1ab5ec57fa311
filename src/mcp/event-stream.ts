/**
 * Reading an event stream the gateway consumes itself, rather than relays (the SSE tap,
 * sse-tap.ts, relays): the answer to a call it made (read as it streams, or held whole once
 * read), a listen it holds. Parsing is eventsource-parser's, with the same decoding and the same
 * bound on an event as the tap, so what the gateway reads of a stream is what it would relay of it.
 *
 * Two depths of reading, each streaming and whole:
 * - each event's data (readEventStream, eventDataOf), for readers that look at the JSON
 *   objects themselves (a listen, a poll's answer: jsonObjectOf, rpcAnswerOf);
 * - the JSON-RPC messages of each event, as the tap parses them (readJsonRpcEvents,
 *   rpcResponseOf).
 */
import { TextDecoder } from 'node:util';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { GatewayError } from '../errors.js';
import { parseUpstreamJsonRpc } from './json-reply.js';
import { isObject, type JsonObject } from './json.js';
import { parseJsonRpcBody, parseJsonText, type JsonRpcResponse, type McpMessage } from './jsonrpc.js';
import { isEventStream } from './media-type.js';

/** What a reader does with each event, in stream order; true stops the reading after it. */
export type EventDataReader = (data: string) => boolean | void | Promise<boolean | void>;
export type JsonRpcMessageReader = (message: McpMessage) => boolean | void | Promise<boolean | void>;

/** A stream of bytes as undici's reply bodies and Node's readables are (the reader iterates it). */
export type ByteStream = AsyncIterable<Buffer | string>;

/**
 * Reads `body` event by event, each event's data handed to `onEvent` (awaited before the next
 * is read). Resolves at the end of the stream, or once `onEvent` says stop; rejects with the
 * stream's own error when it breaks, and with TG_ERR_BAD_GATEWAY when an event passes
 * `maxEventBytes` (UTF-8 bytes of its data, id and type, however the stream is chunked).
 * An event the stream ends in the middle of is not read, as an SSE client would not.
 */
export async function readEventStream(body: ByteStream, maxEventBytes: number, onEvent: EventDataReader): Promise<void> {
  const feed = boundedFeed(maxEventBytes);
  // TextDecoder, as in the tap: it drops a leading BOM as the SSE rules ask.
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of body) {
    if (await feed.read(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }), onEvent)) return;
  }
  await feed.read(feed.finalText(decoder.decode()), onEvent);
}

/**
 * Reads the JSON-RPC messages of `body`'s events as the SSE tap parses them: an event whose
 * data is not JSON-RPC is passed over, one with a forbidden key fails the read
 * (json-reply.ts); a batch is its messages in order. `onMessage` says stop: the rest of that
 * event's messages are still read, then the reading ends.
 */
export function readJsonRpcEvents(body: ByteStream, maxEventBytes: number, onMessage: JsonRpcMessageReader): Promise<void> {
  return readEventStream(body, maxEventBytes, async (data) => {
    let stop = false;
    for (const message of parseUpstreamJsonRpc(data)?.messages ?? []) if (await onMessage(message)) stop = true;
    return stop;
  });
}

/**
 * The data of each event of a stream read whole (an answer the gateway has read to its end):
 * the stream has ended, so a last event that lacks only its closing blank line is read too.
 */
export function eventDataOf(text: string): string[] {
  const data: string[] = [];
  const parser = createParser({ onEvent: (event) => data.push(event.data) });
  parser.feed(text);
  parser.feed('\n\n');
  return data;
}

/** The JSON texts of an answer read whole: a JSON body, or each event of an event stream. */
export function answerTexts(body: string, contentType: string | undefined): string[] {
  return isEventStream(contentType) ? eventDataOf(body) : [body];
}

/**
 * The JSON-RPC response in an answer read whole (the bridge's reading of a poll it made): the
 * first JSON-RPC response of a JSON body or of the events of a stream; what is not one is passed over.
 */
export function rpcResponseOf(body: string | undefined, contentType: string | undefined): JsonRpcResponse | undefined {
  if (body === undefined) return undefined;
  for (const text of answerTexts(body, contentType)) {
    try {
      const found = parseJsonRpcBody(text).messages.find((message): message is JsonRpcResponse => message.kind === 'response');
      if (found) return found;
    } catch {
      // Not a JSON-RPC message (an SSE priming event, a broken body): the next may be.
    }
  }
  return undefined;
}

/**
 * The answer in a backend's reply to a call the gateway made itself, read as a JSON object (the
 * status push's polls, the console's cancel): a JSON body whatever it holds, or the first event
 * of a stream that holds a `result` or an `error` (its notifications come first). Looser than
 * rpcResponseOf on purpose: those readers look at `result` and `error` themselves, and a
 * backend's error object that is not quite JSON-RPC's is still its refusal.
 */
export function rpcAnswerOf(body: string | undefined, contentType: string | undefined): JsonObject | undefined {
  if (body === undefined) return undefined;
  if (!isEventStream(contentType)) return jsonObjectOf(body);
  for (const data of eventDataOf(body)) {
    const message = jsonObjectOf(data);
    if (message && ('result' in message || 'error' in message)) return message;
  }
  return undefined;
}

/**
 * A JSON object's text, parsed with the gateway's own guard (parseJsonText: no `__proto__` or
 * `constructor.prototype` keys from a backend either); undefined for anything else.
 */
export function jsonObjectOf(text: string): JsonObject | undefined {
  try {
    const parsed = parseJsonText(text);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Whether an event's data, id and type come to more than `max` bytes of UTF-8. */
export function exceedsEventBytes(event: EventSourceMessage, max: number): boolean {
  const units = event.data.length + (event.id?.length ?? 0) + (event.event?.length ?? 0);
  // A UTF-16 code unit is 1 to 3 bytes of UTF-8: most events are decided without counting.
  if (units * 3 <= max) return false;
  if (units > max) return true;
  return Buffer.byteLength(event.data) + Buffer.byteLength(event.id ?? '') + Buffer.byteLength(event.event ?? '') > max;
}

/**
 * eventsource-parser with the tap's bound: it enforces `maxEventBytes` on what it buffers
 * between chunks, and an event that arrives whole inside one chunk never passes through that
 * buffer, so each complete event is measured too.
 */
function boundedFeed(maxEventBytes: number) {
  if (!Number.isSafeInteger(maxEventBytes) || maxEventBytes <= 0) throw new TypeError('maxEventBytes must be a positive integer');
  const pending: string[] = [];
  let overflow = false;
  let endsWithCr = false;
  const parser = createParser({
    maxBufferSize: maxEventBytes,
    onEvent: (event) => {
      if (overflow) return;
      if (exceedsEventBytes(event, maxEventBytes)) overflow = true;
      else pending.push(event.data);
    },
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') overflow = true;
    },
  });
  return {
    /** Feeds `text`, then reads the events it completed; true when the reader said stop. */
    async read(text: string, onEvent: EventDataReader): Promise<boolean> {
      if (text !== '') {
        endsWithCr = text.endsWith('\r');
        parser.feed(text);
      }
      while (pending.length > 0) if (await onEvent(pending.shift()!)) return true;
      if (overflow) throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'an upstream SSE event exceeds the size limit' });
      return false;
    },
    /**
     * The decoder's rest at the end of the stream. The parser holds back a final CR in case an
     * LF follows; at the end it is a line end, and the LF added here only makes it a CRLF.
     */
    finalText(rest: string): string {
      return (rest === '' && endsWithCr) || rest.endsWith('\r') ? `${rest}\n` : rest;
    },
  };
}
