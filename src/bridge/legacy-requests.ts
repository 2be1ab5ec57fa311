/**
 * A 2025-11-25 client in front of a backend that serves only 2026-07-28 (it refuses legacy
 * requests: a 2.x SDK server with `legacy: 'reject'`): the gateway speaks modern to the backend and
 * answers the legacy way (DESIGN.md §12).
 *   initialize    answered by the gateway from the backend's server/discover: its capabilities
 *                 (and `tasks` where it has the extension: the bridge serves them), serverInfo
 *                 and instructions; no session is made (the backend keeps none to stick to)
 *   ping          answered by the gateway (the modern era has none)
 *   tools/list, prompts/*, resources/* (list, read, templates), completion/complete
 *                 sent as modern requests; the modern-only fields (resultType, ttlMs, cacheScope)
 *                 are taken off, and each tool may be asked for a task where the backend has them
 *   tools/call    without a task: a modern call; an MRTR input_required, which a legacy client
 *                 cannot answer by retrying, is refused (TG_ERR_NOT_BRIDGED)
 * Notifications and GET streams reach the backend as they are (a modern server acknowledges the
 * first and answers the second 405, which legacy clients take as "no stream").
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Instance } from '../routing/balancer.js';
import type { LocalAnswer } from '../tasks/extension-points.js';
import type { BridgeContext } from './bridge-context.js';
import { LEGACY_VERSION } from '../upstream/request-framer.js';
import { upstreamFailure } from '../upstream/upstream-failure.js';
import { withoutResultType } from './legacy-creation.js';
import { callModern } from './modern-call.js';

/** The legacy methods answered here; the rest are relayed as modern requests. */
export const LEGACY_METHODS = ['initialize', 'ping', 'tools/list', 'prompts/list', 'prompts/get', 'resources/list', 'resources/read', 'resources/templates/list', 'completion/complete'];
const KNOWN_VERSIONS = new Set(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
const NAMED_BY: Record<string, string> = { 'prompts/get': 'name', 'resources/read': 'uri', 'tools/call': 'name' };

export async function answerLegacyRequest(ctx: BridgeContext, request: TaskRequest, message: JsonRpcRequest, instance: Instance, tasks: { modern: boolean; list: boolean }): Promise<LocalAnswer> {
  const modernTasks = tasks.modern;
  if (message.method === 'ping') return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: {} } };
  if (message.method === 'initialize') return initialize(ctx, request, message, instance, tasks);
  const params = isObject(message.params) ? { ...message.params } : {};
  delete params.task;
  const name = NAMED_BY[message.method];
  const value = name === undefined ? undefined : params[name];
  let answer;
  try {
    answer = await callModern(request, instance, { method: message.method, params, ...(typeof value === 'string' ? { name: value } : {}) }, request.abort);
  } catch (error) {
    ctx.count(request, message.method, 'error');
    throw upstreamFailure(error);
  }
  const response = answer.response;
  if (!response) {
    ctx.count(request, message.method, 'error');
    throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: `the backend answered HTTP ${answer.status} without an answer` });
  }
  ctx.count(request, message.method, response.error ? 'error' : 'ok');
  // Legacy: every JSON-RPC error in HTTP 200 (a legacy client reads a 4xx as a transport failure).
  if (response.error) return { status: 200, body: { jsonrpc: '2.0', id: message.id, error: response.error } };
  const result = isObject(response.result) ? response.result : {};
  if (result.resultType === 'input_required') {
    throw new GatewayError('TG_ERR_NOT_BRIDGED', { data: { reason: 'the backend asks for input by a call made again (2026-07-28 MRTR), which a 2025-11-25 client cannot make' } });
  }
  const { ttlMs: _ttl, cacheScope: _scope, ...rest } = withoutResultType(result);
  if (message.method === 'tools/list' && modernTasks && Array.isArray(rest.tools)) {
    rest.tools = rest.tools.map((tool: unknown) => (isObject(tool) ? { ...tool, execution: { taskSupport: 'optional' } } : tool));
  }
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: rest } };
}

async function initialize(ctx: BridgeContext, request: TaskRequest, message: JsonRpcRequest, instance: Instance, tasks: { modern: boolean; list: boolean }): Promise<LocalAnswer> {
  let answer;
  try {
    answer = await callModern(request, instance, { method: 'server/discover', params: {} }, request.abort);
  } catch (error) {
    throw upstreamFailure(error);
  }
  const discovered = answer.response?.result;
  if (!isObject(discovered)) throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: `the backend's server/discover answered HTTP ${answer.status} without a result` });
  const declared = isObject(discovered.capabilities) ? discovered.capabilities : {};
  const capabilities: JsonObject = {};
  for (const [key, value] of Object.entries(declared)) if (key !== 'extensions') capabilities[key] = value;
  // tasks/list is the gateway's, declared only where principals are told apart (src/tasks/).
  if (tasks.modern) capabilities.tasks = { ...(tasks.list ? { list: {} } : {}), cancel: {}, requests: { tools: { call: {} } } };
  const params = isObject(message.params) ? message.params : {};
  const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : LEGACY_VERSION;
  const meta = isObject(discovered._meta) ? discovered._meta : {};
  const serverInfo = isObject(meta['io.modelcontextprotocol/serverInfo']) ? meta['io.modelcontextprotocol/serverInfo'] : { name: 'taskgate', version: '0' };
  const result: JsonObject = { protocolVersion: KNOWN_VERSIONS.has(asked) ? asked : LEGACY_VERSION, capabilities, serverInfo };
  if (typeof discovered.instructions === 'string') result.instructions = discovered.instructions;
  ctx.count(request, 'initialize', 'ok');
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result } };
}
