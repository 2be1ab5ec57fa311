/**
 * One JSON-RPC request the bridge makes to a backend instance on a client's behalf (or its own,
 * for the probes), and the answer read back: a JSON body, or an event stream read up to the
 * response to this request (a 2026 server switches to SSE when notifications precede the
 * result; a 2025 server answers in SSE by default). Reading goes through the same SSE tap and
 * size limits as relayed replies. Nothing here knows a task: the callers do.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Dispatcher } from 'undici';
import { isEventStream, isJson } from '../mcp/media-type.js';
import { parseJsonRpcBody, type JsonRpcRequest, type JsonRpcResponse, type McpMessage } from '../mcp/jsonrpc.js';
import { createSseTap } from '../mcp/sse-tap.js';
import { readBounded } from '../upstream/relay-streams.js';

export interface ExchangeTarget {
  readonly dispatcher: Dispatcher;
  readonly origin: string;
  /** The upstream path (and query) the route forwards to. */
  readonly path: string;
}

export interface ExchangeLimits {
  readonly maxResponseBytes: number;
  readonly maxSseEventBytes: number;
  /** Headers and body together. */
  readonly timeoutMs: number;
}

export interface ExchangeOptions {
  /** The read's own limit, if shorter than the upstream's timeouts. */
  readonly timeoutMs?: number;
  /**
   * Each server→client request as it arrives (2025, mid-stream). Resolves true to stop reading
   * there (the caller has what it came for; the stream is closed, which a 2025 server does not
   * take as a cancellation).
   */
  readonly onServerRequest?: (request: JsonRpcRequest) => Promise<boolean>;
  /** Stop reading this long after the last server request, if no answer came (ms). */
  readonly quietAfterRequestsMs?: number;
}

export interface RpcAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  /** The response to this request, if the backend sent one. */
  readonly response?: JsonRpcResponse;
  /** Server→client requests that came before the response in the same stream (2025). */
  readonly serverRequests: readonly JsonRpcRequest[];
}

export function newRequestId(): string {
  return `taskgate-${randomUUID()}`;
}

/** POSTs `body` (whose id is `id`) with `headers`, and reads the answer to it. */
export async function exchange(
  target: ExchangeTarget,
  id: string,
  body: string,
  headers: Record<string, string>,
  limits: ExchangeLimits,
  signal?: Dispatcher.RequestOptions['signal'],
  options: ExchangeOptions = {},
): Promise<RpcAnswer> {
  const reply = await target.dispatcher.request({
    origin: target.origin,
    path: target.path,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
    signal,
    headersTimeout: limits.timeoutMs,
    bodyTimeout: limits.timeoutMs,
  });
  const contentType = headerValue(reply.headers['content-type']);
  const serverRequests: JsonRpcRequest[] = [];
  let response: JsonRpcResponse | undefined;
  let stop = false;
  let quiet: NodeJS.Timeout | undefined;
  const consider = async (message: McpMessage): Promise<undefined> => {
    if (message.kind === 'response' && message.id === id) response ??= message;
    else if (message.kind === 'request') {
      serverRequests.push(message);
      if (options.onServerRequest && (await options.onServerRequest(message))) stop = true;
      if (options.quietAfterRequestsMs !== undefined) {
        clearTimeout(quiet);
        quiet = setTimeout(() => reply.body.destroy(new StopReading()), options.quietAfterRequestsMs);
      }
    }
    return undefined;
  };
  try {
    if (isEventStream(contentType)) {
      const tap = createSseTap({ maxEventBytes: limits.maxSseEventBytes, onMessage: consider });
      // Read up to the answer, then let the stream go: a 2025 stream may stay open after it.
      const sink = new Writable({
        write: (_chunk, _encoding, done) => (response || stop ? done(new StopReading()) : done()),
      });
      await pipeline(reply.body, tap, sink).catch((error: unknown) => {
        if (!(error instanceof StopReading)) throw error;
      });
    } else if (isJson(contentType)) {
      const text = await readBounded(reply.body, limits.maxResponseBytes);
      for (const message of parseJsonRpcBody(text).messages) await consider(message);
    } else {
      await reply.body.dump();
    }
  } finally {
    clearTimeout(quiet);
    if (!reply.body.destroyed) reply.body.destroy();
  }
  return { status: reply.statusCode, headers: reply.headers as RpcAnswer['headers'], response, serverRequests };
}

/** Ends the read of a stream once its answer is in. */
class StopReading extends Error {}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** SEP-2243: a header value that is not plain visible ASCII travels as `=?base64?…?=`. */
export function encodeHeaderValue(value: string): string {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !value.startsWith('=?base64?');
  return plain ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

