/**
 * The 2026-07-28 requests the bridge sends a backend for a 2025 client (DESIGN.md §12): the
 * per-request `_meta` envelope declaring the tasks extension, the mirrored headers
 * (MCP-Protocol-Version, Mcp-Method, Mcp-Name), and the route's credentials and forwarding
 * headers exactly as a forwarded request of the same client would carry them (never the
 * client's token, never its 2025 session).
 */
import type { TaskRequest } from '../tasks/task-request.js';
import type { Dispatcher } from 'undici';
import { MODERN_VERSION, TASKS_EXTENSION } from '../mcp/era.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { Instance } from '../routing/balancer.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { modernEnvelope } from './generation-probe.js';
import { encodeHeaderValue, exchange, newRequestId, type ExchangeOptions, type RpcAnswer } from './rpc-exchange.js';

/**
 * What the bridge declares for the client: the tasks extension, and elicitation (the 2025
 * client answers questions as server requests on its tasks/result stream). Its own 2025
 * capabilities live in a session the gateway does not keep, so sampling is not declared: a
 * 2026 backend must not ask for it.
 */
export const BRIDGED_CLIENT_CAPABILITIES: JsonObject = { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } };

/** The tasks/* of a bridged task: its backend id as the taskId and the Mcp-Name. */
export function taskCall(record: TaskRecord, method: 'tasks/get' | 'tasks/cancel' | 'tasks/update', extra: JsonObject = {}): { method: string; params: JsonObject; name: string } {
  return { method, params: { ...extra, taskId: record.upstreamTaskId }, name: record.upstreamTaskId };
}

/**
 * The headers a forwarded request of `request`'s client would carry to `instance`, without
 * any of the protocol's own (the caller sets those for the generation it speaks).
 */
export function backendHeaders(request: TaskRequest, instance: Instance): Record<string, string> {
  return request.route.callHeadersFor(request, instance);
}

/** POSTs one JSON-RPC request of the bridge's to `instance` on the request's route, and reads the answer. */
export async function sendToInstance(
  request: TaskRequest,
  instance: Instance,
  id: string,
  body: string,
  headers: Record<string, string>,
  signal?: Dispatcher.RequestOptions['signal'],
  options: ExchangeOptions = {},
): Promise<RpcAnswer> {
  const route = request.route;
  const endpoint = route.endpoints.get(instance.url) ?? new URL(instance.url);
  const { maxResponseBytes, maxSseEventBytes } = request.route.limits;
  const timeoutMs = route.callTimeoutMs;
  // Held open by the snapshot's count like a forwarded request: a reload cannot close the agent under it.
  const leave = request.route.inFlight.enter();
  try {
    return await exchange(
      { dispatcher: route.agent, origin: endpoint.origin, path: route.upstreamTarget.pathname + route.upstreamTarget.search },
      id,
      body,
      headers,
      { maxResponseBytes, maxSseEventBytes, timeoutMs: options.timeoutMs ?? timeoutMs },
      signal,
      options,
    );
  } finally {
    leave();
  }
}

/** Sends `method` with `params` (the envelope added) to `instance`, as `request`'s client. */
export async function callModern(
  request: TaskRequest,
  instance: Instance,
  call: { method: string; params: JsonObject; name?: string },
  signal?: Dispatcher.RequestOptions['signal'],
): Promise<RpcAnswer> {
  const headers = backendHeaders(request, instance);
  headers['mcp-protocol-version'] = MODERN_VERSION;
  headers['mcp-method'] = call.method;
  if (call.name !== undefined) headers['mcp-name'] = encodeHeaderValue(call.name);
  const meta = isObject(call.params._meta) ? call.params._meta : {};
  const params = { ...call.params, _meta: { ...meta, ...modernEnvelope(BRIDGED_CLIENT_CAPABILITIES) } };
  const id = newRequestId();
  return sendToInstance(request, instance, id, JSON.stringify({ jsonrpc: '2.0', id, method: call.method, params }), headers, signal);
}
