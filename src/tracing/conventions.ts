/**
 * Span names and attributes: the OpenTelemetry semantic conventions for MCP (GenAI registry,
 * status Development), the stable HTTP, network, client and server attributes, and taskgate's
 * own under `taskgate.` (the conventions say nothing about tasks). docs/operations.md,
 * "Tracing", lists them.
 *
 * The MCP, GenAI and JSON-RPC names are copied here rather than imported from
 * `@opentelemetry/semantic-conventions/incubating`: that entry point may rename or drop them in
 * any minor release (its own advice is to copy). `rpc.response.status_code` is the name the MCP
 * conventions give; the core registry has since renamed it `rpc.status_code`, and this follows
 * the MCP conventions when they follow.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_NAME,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_NETWORK_TRANSPORT,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from '@opentelemetry/semantic-conventions';
import type { IncomingHttpHeaders } from 'node:http';
import { claimedProtocolVersion, requestMeta } from '../mcp/era.js';
import { isPlainObject, type JsonRpcNotification, type JsonRpcRequest, type McpMessage } from '../mcp/jsonrpc.js';
import type { TaskFacts } from '../observability/exchange-facts.js';
import type { HandleHasher } from '../observability/handle-hash.js';
import type { EraWire } from '../task-model/task-wire.js';

export const ATTR_MCP_METHOD_NAME = 'mcp.method.name';
export const ATTR_MCP_PROTOCOL_VERSION = 'mcp.protocol.version';
export const ATTR_MCP_SESSION_ID = 'mcp.session.id';
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const ATTR_GEN_AI_PROMPT_NAME = 'gen_ai.prompt.name';
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const ATTR_JSONRPC_REQUEST_ID = 'jsonrpc.request.id';
export const ATTR_RPC_RESPONSE_STATUS_CODE = 'rpc.response.status_code';
export { ATTR_ERROR_TYPE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT };
export { ATTR_HTTP_RESPONSE_STATUS_CODE } from '@opentelemetry/semantic-conventions';

/** taskgate's own attributes. */
export const ATTR_TASKGATE_UPSTREAM = 'taskgate.upstream';
export const ATTR_TASKGATE_ERA = 'taskgate.mcp.era';
/** The catalogue code (docs/errors.md) of an error the gateway answered itself. */
export const ATTR_TASKGATE_ERROR_CODE = 'taskgate.error.code';
/** The client went away before its answer was complete. */
export const ATTR_TASKGATE_ABORTED = 'taskgate.aborted';
/** The task's handle as its salted short hash (the general log's `task` field), never the handle. */
export const ATTR_TASK_HANDLE_HASH = 'taskgate.task.handle_hash';
/** The task status this request's answer showed (working, input_required, completed, failed, cancelled). */
export const ATTR_TASK_STATUS = 'taskgate.task.status';
/** A tasks/get: forwarded to the backend, answered from the cached snapshot, or rejected as too early. */
export const ATTR_TASK_POLL_OUTCOME = 'taskgate.task.poll_outcome';
/** How the tasks stage decided: allowed, not_found, denied, throttled. */
export const ATTR_TASK_OUTCOME = 'taskgate.task.outcome';
/** This request's answer created the task. */
export const ATTR_TASK_CREATED = 'taskgate.task.created';
/** The tool that created the task. */
export const ATTR_TASK_TOOL = 'taskgate.task.tool';
/** Why the gateway itself called the backend for a task (expired, refused, or the #15 runner's words). */
export const ATTR_TASKGATE_CALL_REASON = 'taskgate.call.reason';
/** On a link: what the linked span is to this one. */
export const ATTR_TASKGATE_LINK = 'taskgate.link';

/** What names a span and describes its MCP message. */
export interface McpFacts {
  readonly name: string;
  readonly message: JsonRpcRequest | JsonRpcNotification | undefined;
  /** tools/call's tool or prompts/get's prompt: the span name's target. */
  readonly target: string | undefined;
}

/** `{mcp.method.name} {target}`; the HTTP method for what carries no single MCP request. */
export function mcpFactsOf(message: McpMessage | undefined, httpMethod: string): McpFacts {
  if (!message || message.kind === 'response') return { name: httpMethod, message: undefined, target: undefined };
  const target = message.method === 'tools/call' || message.method === 'prompts/get' ? nameParam(message) : undefined;
  return { name: target === undefined ? message.method : `${message.method} ${target}`, message, target };
}

function nameParam(message: JsonRpcRequest | JsonRpcNotification): string | undefined {
  const name = isPlainObject(message.params) ? message.params.name : undefined;
  return typeof name === 'string' && name.length > 0 ? name.slice(0, 128) : undefined;
}

/** The MCP attributes shared by the server span and the upstream call's client span. */
/** What the attributes read of a request. */
export interface AttributedRequest {
  readonly route: { readonly path: string; readonly pool: { readonly upstream: string } };
  readonly mcp?: { readonly era: string };
  /** The request's era (task-model/task-wire.ts): whether it has sessions to name. */
  readonly wire: Pick<EraWire, 'sessions'>;
  readonly clientHeaders: IncomingHttpHeaders;
  readonly httpMethod: string;
  readonly clientIp: string;
  readonly httpVersion: string;
}

export function mcpAttributes(facts: McpFacts, request: AttributedRequest, sessionId: string | undefined): Attributes {
  const tg = request;
  const attributes: Attributes = { [ATTR_TASKGATE_UPSTREAM]: tg.route.pool.upstream };
  if (tg.mcp) attributes[ATTR_TASKGATE_ERA] = tg.mcp.era;
  const message = facts.message;
  if (message) {
    attributes[ATTR_MCP_METHOD_NAME] = message.method;
    if (message.kind === 'request') attributes[ATTR_JSONRPC_REQUEST_ID] = String(message.id);
    if (message.method === 'tools/call') {
      attributes[ATTR_GEN_AI_OPERATION_NAME] = 'execute_tool';
      if (facts.target !== undefined) attributes[ATTR_GEN_AI_TOOL_NAME] = facts.target;
    } else if (message.method === 'prompts/get' && facts.target !== undefined) {
      attributes[ATTR_GEN_AI_PROMPT_NAME] = facts.target;
    }
  }
  const version = protocolVersionOf(request, message);
  if (version !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = version;
  // Sessions ended with 2026-07-28; the conventions forbid the attribute from then on.
  if (sessionId !== undefined && tg.wire.sessions) attributes[ATTR_MCP_SESSION_ID] = sessionId;
  return attributes;
}

function protocolVersionOf(request: AttributedRequest, message: JsonRpcRequest | JsonRpcNotification | undefined): string | undefined {
  const header = request.clientHeaders['mcp-protocol-version'];
  if (typeof header === 'string' && header.length <= 32) return header;
  if (!message) return undefined;
  const claimed = claimedProtocolVersion(message);
  if (claimed !== undefined) return claimed.slice(0, 32);
  // A 2025 initialize carries the version it asks for in its params, before any header.
  const asked = message.method === 'initialize' && isPlainObject(message.params) ? message.params.protocolVersion : undefined;
  return typeof asked === 'string' ? asked.slice(0, 32) : undefined;
}

/** The transport of the client's request, for the server span. */
export function serverTransportAttributes(request: AttributedRequest): Attributes {
  return {
    [ATTR_HTTP_REQUEST_METHOD]: request.httpMethod,
    [ATTR_HTTP_ROUTE]: request.route.path,
    [ATTR_CLIENT_ADDRESS]: request.clientIp,
    [ATTR_NETWORK_PROTOCOL_NAME]: 'http',
    [ATTR_NETWORK_PROTOCOL_VERSION]: request.httpVersion,
    [ATTR_NETWORK_TRANSPORT]: 'tcp',
  };
}

/** The backend instance a client span calls. */
export function upstreamTransportAttributes(method: string, endpoint: URL): Attributes {
  return {
    [ATTR_HTTP_REQUEST_METHOD]: method,
    [ATTR_SERVER_ADDRESS]: endpoint.hostname,
    [ATTR_SERVER_PORT]: endpoint.port === '' ? (endpoint.protocol === 'https:' ? 443 : 80) : Number(endpoint.port),
    [ATTR_NETWORK_PROTOCOL_NAME]: 'http',
    [ATTR_NETWORK_TRANSPORT]: 'tcp',
  };
}

/** What the tasks stage decided and saw, read once the request is over. Never a raw handle. */
export function taskAttributes(tg: Readonly<TaskFacts>, hashHandle: HandleHasher): Attributes | undefined {
  const record = tg.createdTask ?? tg.task;
  const handle = record?.handle ?? tg.requestedHandle;
  if (handle === undefined && tg.taskOutcome === undefined) return undefined;
  const attributes: Attributes = {};
  if (handle !== undefined) attributes[ATTR_TASK_HANDLE_HASH] = hashHandle(handle);
  const status = tg.statusSeen ?? tg.createdTask?.status;
  if (status !== undefined) attributes[ATTR_TASK_STATUS] = status;
  if (tg.pollOutcome !== undefined) attributes[ATTR_TASK_POLL_OUTCOME] = tg.pollOutcome;
  if (tg.taskOutcome !== undefined) attributes[ATTR_TASK_OUTCOME] = tg.taskOutcome;
  if (tg.createdTask) attributes[ATTR_TASK_CREATED] = true;
  if (record) attributes[ATTR_TASK_TOOL] = record.tool;
  return attributes;
}

/**
 * The outcome of a JSON-RPC answer as the conventions record it: a JSON-RPC error by its code
 * (rpc.response.status_code and error.type), a tool result with isError as `tool_error`.
 * Undefined for a success.
 */
export function answerOutcome(message: McpMessage): { errorType: string; rpcCode?: string; description?: string } | undefined {
  if (message.kind !== 'response') return undefined;
  if (message.error) {
    const code = String(message.error.code);
    return { errorType: code, rpcCode: code, description: message.error.message };
  }
  const result = message.result;
  if (isPlainObject(result) && result.isError === true) return { errorType: 'tool_error' };
  return undefined;
}

/** `params._meta` of the client's single request or notification, where MCP-level context travels. */
export function metaOf(message: McpMessage | undefined): Record<string, unknown> | undefined {
  return message && message.kind !== 'response' ? requestMeta(message) : undefined;
}
