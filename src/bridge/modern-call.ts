/**
 * The 2026-07-28 requests the bridge sends a backend for a 2025 client (DESIGN.md §12): framed
 * as the gateway frames its 2026 requests (src/upstream/request-framer.ts: the per-request
 * `_meta` envelope declaring the tasks extension, the mirrored headers), sent through the
 * route's door with the route's credentials and forwarding headers exactly as a forwarded
 * request of the same client would carry them (never the client's token, never its 2025 session).
 */
import type { TaskRequest } from '../tasks/task-request.js';
import type { Dispatcher } from 'undici';
import { TASKS_EXTENSION } from '../mcp/era.js';
import type { JsonObject } from '../mcp/json.js';
import type { Instance } from '../routing/balancer.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { frameModern, type FramedRequest } from '../upstream/request-framer.js';
import { readAnswer, type ExchangeOptions, type RpcAnswer } from './rpc-exchange.js';

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
 * Sends one JSON-RPC message of the bridge's to `instance` through the request's route (its
 * credentials and forwarding headers, its call timeout unless `options` says shorter), and
 * reads the answer.
 */
export async function sendToInstance(
  request: TaskRequest,
  instance: Instance,
  framed: FramedRequest,
  signal?: Dispatcher.RequestOptions['signal'],
  options: ExchangeOptions = {},
): Promise<RpcAnswer> {
  const { maxResponseBytes, maxSseEventBytes } = request.route.limits;
  const timeouts = options.timeoutMs === undefined ? {} : { headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs };
  return request.route.call(request, instance, { ...framed, signal, ...timeouts }, readAnswer(framed.id, { maxResponseBytes, maxSseEventBytes }, options));
}

/** Sends `method` with `params` (the envelope added) to `instance`, as `request`'s client. */
export async function callModern(
  request: TaskRequest,
  instance: Instance,
  call: { method: string; params: JsonObject; name?: string },
  signal?: Dispatcher.RequestOptions['signal'],
): Promise<RpcAnswer> {
  return sendToInstance(request, instance, frameModern(call.method, call.params, { capabilities: BRIDGED_CLIENT_CAPABILITIES, name: call.name }), signal);
}
