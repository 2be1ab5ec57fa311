/**
 * The answer to one JSON-RPC request the bridge made of a backend instance on a client's behalf
 * (through the route's door, BackendRoute.call) or its own (the probes, BackendRoute.asGateway):
 * a JSON body, or an event stream read up to the response to this request (a 2026 server
 * switches to SSE when notifications precede the result; a 2025 server answers in SSE by
 * default), with the route's size limits. Nothing here knows a task: the callers do.
 */
import type { JsonRpcRequest, JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { ReadReply } from '../upstream/gateway-send.js';
import { readReplyMessages, type ReplyLimits } from '../upstream/gateway-replies.js';

export type ExchangeLimits = ReplyLimits;

export interface ExchangeOptions {
  /** The read's own limit, if shorter than the route's call timeout. */
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

/** Reads the answer to the request whose id is `id` (none: a notification or an answer, whose reply is only its status). */
export function readAnswer(id: string | undefined, limits: ExchangeLimits, options: ExchangeOptions = {}): ReadReply<RpcAnswer> {
  return async (reply) => {
    const serverRequests: JsonRpcRequest[] = [];
    let response: JsonRpcResponse | undefined;
    let stop = false;
    let quiet: NodeJS.Timeout | undefined;
    try {
      // Read up to the answer, then let the stream go: a 2025 stream may stay open after it.
      await readReplyMessages(reply, limits, async (message) => {
        if (message.kind === 'response' && id !== undefined && message.id === id) response ??= message;
        else if (message.kind === 'request') {
          serverRequests.push(message);
          if (options.onServerRequest && (await options.onServerRequest(message))) stop = true;
          if (options.quietAfterRequestsMs !== undefined) {
            clearTimeout(quiet);
            quiet = setTimeout(() => reply.body.destroy(new StopReading()), options.quietAfterRequestsMs);
          }
        }
        return response !== undefined || stop;
      }).catch((error: unknown) => {
        if (!(error instanceof StopReading)) throw error;
      });
    } finally {
      clearTimeout(quiet);
      if (!reply.body.destroyed) reply.body.destroy();
    }
    return { status: reply.statusCode, headers: reply.headers as RpcAnswer['headers'], response, serverRequests };
  };
}

/** Ends the read of a stream that went quiet after its questions. */
class StopReading extends Error {}

