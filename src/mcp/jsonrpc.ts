/**
 * JSON-RPC 2.0 framing for MCP bodies: parse a POST body or an upstream reply into typed
 * messages, and write them back without losing fields this gateway does not know about.
 */
import { safeParse } from 'secure-json-parse';
import { GatewayError } from '../errors.js';
import { isObject } from './json.js';

/** MCP forbids null request ids (JSON-RPC only discourages them). */
export type RequestId = string | number;
export type JsonRpcParams = Record<string, unknown> | unknown[];

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * `raw` is the object as parsed. serializeMessage starts from it so that unknown members
 * (extensions, future fields) survive a rewrite; messages built by the gateway may omit it.
 */
export interface JsonRpcRequest {
  kind: 'request';
  id: RequestId;
  method: string;
  params?: JsonRpcParams;
  raw?: Record<string, unknown>;
}

export interface JsonRpcNotification {
  kind: 'notification';
  method: string;
  params?: JsonRpcParams;
  raw?: Record<string, unknown>;
}

/** Exactly one of `result` / `error` is set on a parsed response; `id` is null only with `error`. */
export interface JsonRpcResponse {
  kind: 'response';
  id: RequestId | null;
  result?: unknown;
  error?: JsonRpcErrorObject;
  raw?: Record<string, unknown>;
  /**
   * `result` as JSON text, set by a hook that has just serialised it after its last change
   * (a polled task, serialised once for its snapshot): serializeMessage uses it rather than
   * serialising the result a second time.
   */
  resultText?: string;
}

export type McpMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

export interface ParsedJsonRpcBody {
  messages: McpMessage[];
  /** True when the body was a JSON array, even one of a single element. */
  batch: boolean;
}

/** A JSON object (src/mcp/json.ts), under the name the protocol code reads it by. */
export const isPlainObject = isObject;

/**
 * JSON.parse plus a refusal of `__proto__` and `constructor.prototype` keys (secure-json-parse,
 * fastify's own guard, so the rule matches fastify's body parser). JSON.parse itself creates
 * such keys as plain own properties, but any later merge or Object.assign of the parsed value
 * would turn them into a prototype change; refusing them here keeps every stage safe.
 *
 * Throws TG_ERR_PARSE for malformed JSON and TG_ERR_INVALID_REQUEST for a forbidden key, so
 * callers relaying upstream bytes can tell "not JSON" (pass through) from "hostile JSON".
 */
export function parseJsonText(body: Buffer | string): unknown {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  // safeParse answers undefined for a syntax error and null for a forbidden key (and for the
  // literal `null`, told apart below).
  const value: unknown = safeParse(text);
  if (value === undefined) throw new GatewayError('TG_ERR_PARSE');
  if (value === null && text.trim() !== 'null') {
    throw new GatewayError('TG_ERR_INVALID_REQUEST', {
      detail: 'forbidden "__proto__" or "constructor.prototype" key',
    });
  }
  return value;
}

function invalid(detail: string): GatewayError {
  return new GatewayError('TG_ERR_INVALID_REQUEST', { detail });
}

/** Strings or safe integers: a larger integer would not survive JSON.parse and back unchanged. */
function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

function isErrorObject(value: unknown): value is JsonRpcErrorObject {
  return isPlainObject(value) && Number.isSafeInteger(value.code) && typeof value.message === 'string';
}

function toMessage(value: unknown): McpMessage {
  if (!isPlainObject(value)) return failWith('message is not an object');
  if (value.jsonrpc !== '2.0') return failWith('"jsonrpc" must be "2.0"');
  const hasId = Object.hasOwn(value, 'id');
  const hasResult = Object.hasOwn(value, 'result');
  const hasError = Object.hasOwn(value, 'error');

  if (Object.hasOwn(value, 'method')) {
    if (typeof value.method !== 'string') return failWith('"method" must be a string');
    if (hasResult || hasError) return failWith('a message cannot carry both "method" and "result"/"error"');
    let params: JsonRpcParams | undefined;
    if (Object.hasOwn(value, 'params')) {
      if (!isPlainObject(value.params) && !Array.isArray(value.params)) {
        return failWith('"params" must be an object or an array');
      }
      params = value.params;
    }
    if (!hasId) return withParams({ kind: 'notification', method: value.method, raw: value }, params);
    if (!isRequestId(value.id)) return failWith('request "id" must be a string or an integer');
    return withParams({ kind: 'request', id: value.id, method: value.method, raw: value }, params);
  }

  if (hasResult === hasError) return failWith('a response needs exactly one of "result" and "error"');
  if (!hasId) return failWith('a response needs an "id"');
  if (hasError) {
    if (!isErrorObject(value.error)) return failWith('"error" needs an integer "code" and a string "message"');
    if (value.id !== null && !isRequestId(value.id)) {
      return failWith('response "id" must be a string, an integer or null');
    }
    return { kind: 'response', id: value.id, error: value.error, raw: value };
  }
  if (!isRequestId(value.id)) return failWith('response "id" must be a string or an integer');
  return { kind: 'response', id: value.id, result: value.result, raw: value };
}

function failWith(detail: string): never {
  throw invalid(detail);
}

function withParams<T extends JsonRpcRequest | JsonRpcNotification>(message: T, params: JsonRpcParams | undefined): T {
  if (params !== undefined) message.params = params;
  return message;
}

/** Validates an already parsed JSON value as one JSON-RPC message or a batch of them. */
export function toMcpMessages(value: unknown): ParsedJsonRpcBody {
  if (!Array.isArray(value)) return { messages: [toMessage(value)], batch: false };
  if (value.length === 0) throw invalid('empty batch');
  const messages = value.map((element, index) => {
    try {
      return toMessage(element);
    } catch (error) {
      if (error instanceof GatewayError) throw invalid(`batch element ${index}: ${error.detail ?? ''}`);
      throw error;
    }
  });
  return { messages, batch: true };
}

/** A POST body or upstream reply → messages; throws TG_ERR_PARSE or TG_ERR_INVALID_REQUEST. */
export function parseJsonRpcBody(body: Buffer | string): ParsedJsonRpcBody {
  return toMcpMessages(parseJsonText(body));
}

const MANAGED_KEYS = ['jsonrpc', 'id', 'method', 'params', 'result', 'error'] as const;

/**
 * The wire object: `raw` with the typed fields written over it. Keys keep their original
 * order (assigning an existing key does not move it); members that do not belong to the
 * message's kind are removed, so a request turned into a response loses `method`/`params`.
 */
export function toJsonRpcObject(message: McpMessage): Record<string, unknown> {
  const managed: Record<(typeof MANAGED_KEYS)[number], unknown> = {
    jsonrpc: '2.0',
    id: message.kind === 'notification' ? undefined : message.id,
    method: message.kind === 'response' ? undefined : message.method,
    params: message.kind === 'response' ? undefined : message.params,
    result: message.kind === 'response' ? message.result : undefined,
    error: message.kind === 'response' ? message.error : undefined,
  };
  // Spread defines own properties, so even a "__proto__" key in raw could not change a prototype.
  const out: Record<string, unknown> = { ...message.raw };
  for (const key of MANAGED_KEYS) {
    const value = managed[key];
    if (value === undefined) delete out[key];
    else out[key] = value;
  }
  return out;
}

export function serializeMessage(message: McpMessage): string {
  if (message.kind === 'response' && message.resultText !== undefined && message.result !== undefined && onlyResponseKeys(message.raw)) {
    return `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${message.resultText}}`;
  }
  return JSON.stringify(toJsonRpcObject(message));
}

/** Whether a response carries nothing but the members the short form above writes. */
function onlyResponseKeys(raw: Record<string, unknown> | undefined): boolean {
  for (const key in raw) if (key !== 'jsonrpc' && key !== 'id' && key !== 'result') return false;
  return true;
}

export function serializeMessages(messages: readonly McpMessage[], batch: boolean): string {
  if (batch) return JSON.stringify(messages.map(toJsonRpcObject));
  if (messages.length !== 1) throw new TypeError('a non-batch body holds exactly one message');
  return serializeMessage(messages[0] as McpMessage);
}
