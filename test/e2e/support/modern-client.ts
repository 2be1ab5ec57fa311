// A 2026-07-28 task client for tests: the real ext-tasks session (over the real SDK Client) for the
// flows, and one fetch path underneath that records every task exchange so a test can assert on
// HTTP status, headers and JSON-RPC body, directly against a backend or through the gateway.
//
// ext-tasks 0.2.2 cannot send 2026 task traffic through the SDK Client (whose codec rejects
// resultType "task"), so it asks the host for `rawDispatch` plus `v2RequestFraming`; it passes the
// task id as an `Mcp-Name` entry in `options.context.headers`, and leaves tools/call's Mcp-Name,
// the other standard headers and the JSON-RPC id to the host.
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import {
  createTaskSessionFromClient,
  type ApplicationInputHandler,
  type DispatchOptions,
  type JsonRpcResponse,
  type TaskEnabledSession,
  type TaskPreference,
  type TaskView,
  type ToolExecution,
} from '@modelcontextprotocol/ext-tasks/client';
import { taskId as toTaskId } from '@modelcontextprotocol/ext-tasks/core';
import { readMessagesUntil } from './reply-messages.js';

export const PROTOCOL_VERSION = '2026-07-28';
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CLIENT_INFO = { name: 'taskgate-test-client', version: '1.0.0' };
/** What the ext-tasks framing declares on every task request (it adds the tasks extension itself). */
const CLIENT_CAPABILITIES = { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } };
/**
 * The request methods whose params field the Mcp-Name header mirrors. Written out again rather
 * than imported from src/mcp: this client is an independent peer, so a mistake in the gateway's
 * table cannot hide itself in the tests.
 */
const MCP_NAME_SOURCE: Record<string, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** One HTTP round trip, as the test sees it. */
export interface HttpExchange {
  request: { headers: Record<string, string>; body: Record<string, unknown> };
  status: number;
  headers: Headers;
  /** Every JSON-RPC message in the reply, in order (SSE may carry notifications first). */
  messages: Record<string, unknown>[];
  /** The JSON-RPC response (the message that carries `result` or `error`), if there was one. */
  response?: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };
}

export interface RawOptions {
  /** Added after (so overriding) the standard headers and the client's own headers. */
  headers?: Record<string, string>;
  /** Standard or client headers to leave out, e.g. `['Mcp-Name']` (case-insensitive). */
  omitHeaders?: string[];
  /** The `_meta` envelope to add: declaring the tasks extension (default), declaring nothing, or none. */
  envelope?: 'tasks' | 'plain' | 'none';
  /** Aborts the exchange (closing a response stream ends a listen). */
  signal?: AbortSignal;
}

export interface ModernTaskClientOptions {
  /** Sent on every request, e.g. `Authorization`. */
  headers?: Record<string, string>;
  /** Answers a task's inputRequests while ext-tasks drives an execution (default: it cancels elicitations). */
  onInputRequest?: ApplicationInputHandler['handle'];
}

export interface ModernTaskClient {
  /** The ext-tasks session, for flows beyond the shortcuts below. */
  readonly session: TaskEnabledSession;
  /** Every exchange made through rawDispatch or raw(), oldest first. */
  readonly exchanges: readonly HttpExchange[];
  lastExchange(): HttpExchange;
  /** Through ext-tasks: a `task` execution (driven in the background until `detach()`) or an `immediate` one. */
  callTool(
    name: string,
    args?: Record<string, unknown>,
    opts?: { headers?: Record<string, string>; preference?: TaskPreference },
  ): Promise<ToolExecution<CallToolResult>>;
  /** tasks/get through ext-tasks; a JSON-RPC error rejects with its JsonRpcResponseError. */
  getTask(taskId: string, opts?: { headers?: Record<string, string> }): Promise<TaskView>;
  updateTask(taskId: string, inputResponses: Record<string, unknown>, opts?: { headers?: Record<string, string> }): Promise<void>;
  cancelTask(taskId: string, opts?: { headers?: Record<string, string> }): Promise<void>;
  /** Any JSON-RPC request with the standard headers derived from it; never throws on a JSON-RPC error. */
  raw(method: string, params?: Record<string, unknown>, opts?: RawOptions): Promise<HttpExchange>;
  close(): Promise<void>;
}

export async function createModernTaskClient(url: string, opts: ModernTaskClientOptions = {}): Promise<ModernTaskClient> {
  const extraHeaders = opts.headers ?? {};
  const exchanges: HttpExchange[] = [];
  let nextId = 1;

  const send = async (
    body: Record<string, unknown>,
    headers: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<HttpExchange> => {
    const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal });
    // The reply ends with the response for this id; a stream may stay open after it.
    const messages = await readMessagesUntil(response, (m) => m.id === body.id && ('result' in m || 'error' in m));
    const exchange: HttpExchange = {
      request: { headers, body },
      status: response.status,
      headers: response.headers,
      messages,
      response: messages.find((m) => 'result' in m || 'error' in m) as HttpExchange['response'],
    };
    exchanges.push(exchange);
    return exchange;
  };

  const raw: ModernTaskClient['raw'] = (method, params = {}, rawOpts = {}) => {
    const envelope = rawOpts.envelope ?? 'tasks';
    const framed = envelope === 'none' ? params : withEnvelope(params, envelope === 'tasks' ? CLIENT_CAPABILITIES : {});
    const body = { jsonrpc: '2.0', id: nextId++, method, params: framed };
    const headers = { ...standardHeaders(method, framed), ...extraHeaders, ...rawOpts.headers };
    const omit = new Set((rawOpts.omitHeaders ?? []).map((h) => h.toLowerCase()));
    const kept = Object.fromEntries(Object.entries(headers).filter(([name]) => !omit.has(name.toLowerCase())));
    return send(body, kept, rawOpts.signal);
  };

  const rawDispatch = async (request: unknown, options: DispatchOptions = {}): Promise<JsonRpcResponse> => {
    const { method, params } = request as { method: string; params: Record<string, unknown> };
    const body = { jsonrpc: '2.0', id: nextId++, method, params };
    const headers = { ...standardHeaders(method, params), ...extraHeaders, ...options.context?.headers };
    const exchange = await send(body, headers, options.signal);
    const { response } = exchange;
    if (response?.error !== undefined) return { kind: 'error', error: response.error as never };
    if (response?.result !== undefined) return { kind: 'result', result: response.result as never };
    throw new Error(`HTTP ${exchange.status} with no JSON-RPC response for ${method}`);
  };

  const client = new Client(CLIENT_INFO, { versionNegotiation: { mode: { pin: PROTOCOL_VERSION } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: extraHeaders } }));
  let session: TaskEnabledSession;
  try {
    session = createTaskSessionFromClient(client, {
      endpointId: `taskgate-test:${url}`,
      rawDispatch: rawDispatch as never,
      v2RequestFraming: { protocolVersion: PROTOCOL_VERSION, clientInfo: CLIENT_INFO, clientCapabilities: CLIENT_CAPABILITIES },
      ...(opts.onInputRequest === undefined ? {} : { onInputRequest: opts.onInputRequest }),
    });
  } catch (error) {
    await client.close();
    throw error;
  }

  return {
    session,
    exchanges,
    lastExchange() {
      const last = exchanges.at(-1);
      if (last === undefined) throw new Error('no exchange yet');
      return last;
    },
    callTool: (name, args = {}, callOpts = {}) =>
      session.callTool<CallToolResult>(name, args as never, {
        ...(callOpts.headers === undefined ? {} : { headers: callOpts.headers }),
        ...(callOpts.preference === undefined ? {} : { task: { preference: callOpts.preference } }),
      }),
    getTask: (taskId, taskOpts = {}) => session.task(toTaskId(taskId), taskOpts).snapshot(),
    updateTask: (taskId, inputResponses, taskOpts = {}) => session.task(toTaskId(taskId), taskOpts).updateJson(inputResponses),
    cancelTask: (taskId, taskOpts = {}) => session.task(toTaskId(taskId), taskOpts).cancel(),
    raw,
    async close() {
      await session.close();
      await client.close();
    },
  };
}

function withEnvelope(params: Record<string, unknown>, clientCapabilities: object): Record<string, unknown> {
  const callerMeta = (params._meta ?? {}) as Record<string, unknown>;
  return {
    ...params,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
      'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
      'io.modelcontextprotocol/clientCapabilities': clientCapabilities,
      ...callerMeta,
    },
  };
}

function standardHeaders(method: string, params: Record<string, unknown>): Record<string, string> {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': PROTOCOL_VERSION,
    'Mcp-Method': method,
  };
  const field = MCP_NAME_SOURCE[method];
  const value = field === undefined ? undefined : params[field];
  if (typeof value === 'string') headers['Mcp-Name'] = encodeHeaderValue(value);
  return headers;
}

/** SEP-2243: values that are not plain visible ASCII travel as `=?base64?…?=`. */
function encodeHeaderValue(value: string): string {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !value.startsWith('=?base64?');
  return plain ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}
