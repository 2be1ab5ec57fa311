/**
 * Reading the reply to a request the gateway made itself: the JSON-RPC messages it carries, as
 * a JSON body read whole (up to the response limit) or an event stream read event by event
 * (src/mcp/event-stream.ts, each event within the event limit), in order; any other body is
 * drained, so its connection goes back to the pool.
 */
import type { Dispatcher } from 'undici';
import { readJsonRpcEvents, type JsonRpcMessageReader } from '../mcp/event-stream.js';
import { parseJsonRpcBody } from '../mcp/jsonrpc.js';
import { isEventStream, isJson } from '../mcp/media-type.js';
import { readBounded } from './relay-streams.js';

export interface ReplyLimits {
  readonly maxResponseBytes: number;
  readonly maxSseEventBytes: number;
}

/** One value of a reply header (the first of several). */
export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Hands each JSON-RPC message of `reply` to `onMessage`, awaited in turn. A stream is read
 * until it ends or `onMessage` says stop (the caller then lets the rest go); a JSON body is
 * read whole, every message of it. Rejects when the body breaks, passes a limit, or a JSON body
 * is not JSON-RPC.
 */
export async function readReplyMessages(reply: Dispatcher.ResponseData, limits: ReplyLimits, onMessage: JsonRpcMessageReader): Promise<void> {
  const contentType = headerValue(reply.headers['content-type']);
  if (isEventStream(contentType)) {
    await readJsonRpcEvents(reply.body, limits.maxSseEventBytes, onMessage);
  } else if (isJson(contentType)) {
    const text = await readBounded(reply.body, limits.maxResponseBytes);
    for (const message of parseJsonRpcBody(text).messages) await onMessage(message);
  } else {
    await reply.body.dump();
  }
}
