/**
 * What the soak's client sends and how it reads the answers: one JSON-RPC request per POST
 * on an undici Pool (no SDK per task), the answer read whole (JSON, or the last response of an
 * event stream, parsed by eventsource-parser), and every answer put in one class: `ok`, the
 * gateway's catalogue code with its HTTP status (`503 TG_ERR_STORE_UNAVAILABLE`), a JSON-RPC
 * error the backend sent, or what went wrong on the connection.
 */
import { createParser } from 'eventsource-parser';
import type { Pool } from 'undici';
import { describeError, ERROR_CIRCUMSTANCES, type ErrorCode } from '../../src/errors.js';
import { rpcRequest, type RequestSpec } from '../scenarios.js';

export type Era = '2025-11-25' | '2026-07-28';
export const LEGACY: Era = '2025-11-25';
export const MODERN: Era = '2026-07-28';

export interface RpcMessage {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

export interface Answer {
  /** 0 when no HTTP answer came (see `transport`). */
  status: number;
  message?: RpcMessage;
  headers: Record<string, string | string[] | undefined>;
  /** What went wrong on the connection: `connection refused`, `connection closed`, `timeout`, … */
  transport?: string;
  /** From sending to the last byte read. */
  ms: number;
}

/** One request of `era`, with the 2025 session when there is one. */
export function request(era: Era, token: string, method: string, params: Record<string, unknown>, name?: string, session?: string): RequestSpec {
  const spec = rpcRequest(era, token, method, params, name);
  if (session !== undefined) spec.headers['mcp-session-id'] = session;
  return spec;
}

/** A notification (no id): 2025 `notifications/initialized`. */
export function notification(token: string, method: string, session: string): RequestSpec {
  const spec = request(LEGACY, token, method, {}, undefined, session);
  spec.body = JSON.stringify({ jsonrpc: '2.0', method });
  return spec;
}

function transportClass(error: unknown): string {
  const err = error as { code?: string; name?: string; cause?: { code?: string } };
  const code = err.code ?? err.cause?.code ?? err.name ?? 'error';
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return 'connection closed';
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'timeout';
    case 'UND_ERR_ABORTED':
    case 'AbortError':
      return 'aborted';
    default:
      return `transport ${code}`;
  }
}

/** The last JSON-RPC response of an event stream (progress and other notifications come first). */
function lastResponse(text: string): RpcMessage | undefined {
  let found: RpcMessage | undefined;
  const parser = createParser({
    onEvent(event) {
      try {
        const message = JSON.parse(event.data) as RpcMessage;
        if (message.id !== undefined) found = message;
      } catch {
        // not JSON: not a response
      }
    },
  });
  parser.feed(text);
  return found;
}

export async function post(pool: Pool, path: string, spec: RequestSpec, timeoutMs: number, signal?: AbortSignal): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await pool.request({ path, method: 'POST', headers: spec.headers, body: spec.body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal });
    const text = await res.body.text();
    const type = String(res.headers['content-type'] ?? '');
    let message: RpcMessage | undefined;
    if (type.startsWith('text/event-stream')) message = lastResponse(text);
    else if (text.length > 0) {
      try {
        message = JSON.parse(text) as RpcMessage;
      } catch {
        message = undefined;
      }
    }
    return { status: res.statusCode, message, headers: res.headers, ms: performance.now() - started };
  } catch (error) {
    return { status: 0, headers: {}, transport: transportClass(error), ms: performance.now() - started };
  }
}

/**
 * The catalogue, longest message first: a message may carry a detail after its own text, and
 * one code's message can begin another's ("Too Many Requests" and "Too Many Requests: live task
 * limit reached").
 */
const CATALOGUE = (Object.keys(ERROR_CIRCUMSTANCES) as ErrorCode[])
  .map((code) => ({ code, ...describeError(code) }))
  .sort((a, b) => b.message.length - a.message.length);

/** The gateway's code for a JSON-RPC error, or undefined when it is not one of the gateway's. */
export function catalogueCode(error: { code: number; message: string }): ErrorCode | undefined {
  return CATALOGUE.find((entry) => entry.rpcCode === error.code && (error.message === entry.message || error.message.startsWith(`${entry.message}: `)))?.code;
}

export const OK = 'ok';

export function classify(answer: Answer): string {
  if (answer.transport) return answer.transport;
  const error = answer.message?.error;
  if (error) {
    const code = catalogueCode(error);
    return code ? `${answer.status} ${code}` : `${answer.status} backend error ${error.code}`;
  }
  if (answer.status >= 200 && answer.status < 300 && (answer.message?.result !== undefined || answer.status === 202)) return OK;
  return `${answer.status} without a JSON-RPC answer`;
}
