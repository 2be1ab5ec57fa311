/**
 * A 2026-07-28 client in front of a backend that serves only 2025-11-25 (DESIGN.md §12): the
 * gateway speaks legacy to the backend in the principal's own session (legacy-sessions.ts) and
 * answers the modern way.
 *   server/discover       built from the session's initialize: its capabilities, info and
 *                         instructions, and the tasks extension where the backend has legacy tasks
 *   tools/list, prompts/*, resources/* (list, read, templates), completion/complete
 *                         sent in the session; the result gets its modern resultType (and, for
 *                         the cacheable ones, `ttlMs: 0` and `cacheScope: "private"`: the gateway
 *                         does not know how long the backend's answer holds, nor for whom)
 *   tools/call            a task (params.task) when the client declared the extension and the
 *                         tool offers one (execution.taskSupport); otherwise a plain call
 * A question the backend asks during a plain call cannot reach a modern client (it has no server
 * requests, and MRTR needs the server's cooperation): it is declined at once, so the call ends.
 * Everything else is refused with TG_ERR_NOT_BRIDGED, never sent to a backend that cannot read it.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import { GatewayError } from '../errors.js';
import { CLIENT_CAPABILITIES_META, declaresTasksExtension, MODERN_VERSION, PROTOCOL_VERSION_META, TASKS_EXTENSION } from '../mcp/era.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { Instance } from '../routing/balancer.js';
import type { LocalAnswer, StageDeps } from '../tasks/extension-points.js';
import type { BridgeContext } from './bridge-context.js';
import { upstreamFailure } from '../upstream/upstream-failure.js';
import { answerInSession, type LegacySessions } from './legacy-sessions.js';
import { createBridgedModernTask } from './modern-creation.js';
import type { RpcAnswer } from './rpc-exchange.js';

const RELAYED = new Set(['tools/list', 'prompts/list', 'prompts/get', 'resources/list', 'resources/read', 'resources/templates/list', 'completion/complete']);
const CACHEABLE = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/read', 'resources/templates/list']);
const ENVELOPE_KEYS = [PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META, 'io.modelcontextprotocol/clientInfo', 'io.modelcontextprotocol/logLevel', 'progressToken'];

export async function answerModernRequest(ctx: BridgeContext, sessions: LegacySessions, deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, instance: Instance): Promise<LocalAnswer | undefined> {
  const method = message.method;
  if (method.startsWith('tasks/')) return undefined; // the stage's: a bridged record comes back to this room
  if (method === 'server/discover') return discover(ctx, sessions, request, message, instance);
  if (method === 'tools/call') {
    const params = isObject(message.params) ? message.params : {};
    const tool = typeof params.name === 'string' ? params.name : '';
    const support = ctx.generations.of(request.route.pool.upstream, instance.url).legacyTools?.[tool];
    const declared = declaresTasksExtension(message);
    if (declared && (support === 'optional' || support === 'required')) {
      return createBridgedModernTask(ctx, sessions, deps, request, message, legacyParams(params), tool, instance);
    }
    if (support === 'required') {
      throw new GatewayError('TG_ERR_MISSING_CAPABILITY', { data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } });
    }
    return relay(ctx, sessions, request, message, instance);
  }
  if (RELAYED.has(method)) return relay(ctx, sessions, request, message, instance);
  throw new GatewayError('TG_ERR_NOT_BRIDGED', { data: { reason: `${method} has no 2025-11-25 form the gateway carries to this backend` } });
}

async function discover(ctx: BridgeContext, sessions: LegacySessions, request: TaskRequest, message: JsonRpcRequest, instance: Instance): Promise<LocalAnswer> {
  let session;
  try {
    session = await sessions.sessionFor(request, instance);
  } catch (error) {
    throw upstreamFailure(error);
  }
  const init = session.initialize;
  const declared = isObject(init.capabilities) ? init.capabilities : {};
  // Legacy-only keys (tasks, the session's logging) have no place in modern capabilities.
  const capabilities: JsonObject = {};
  for (const key of ['tools', 'prompts', 'resources', 'completions', 'experimental'] as const) if (declared[key] !== undefined) capabilities[key] = declared[key];
  if (ctx.generations.of(request.route.pool.upstream, instance.url).legacyTasks) capabilities.extensions = { [TASKS_EXTENSION]: {} };
  const result: JsonObject = { resultType: 'complete', supportedVersions: [MODERN_VERSION], capabilities, ttlMs: 0, cacheScope: 'private' };
  if (typeof init.instructions === 'string') result.instructions = init.instructions;
  if (isObject(init.serverInfo)) result._meta = { 'io.modelcontextprotocol/serverInfo': init.serverInfo };
  ctx.count(request, 'server/discover', 'ok');
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result } };
}

async function relay(ctx: BridgeContext, sessions: LegacySessions, request: TaskRequest, message: JsonRpcRequest, instance: Instance): Promise<LocalAnswer> {
  const params = legacyParams(isObject(message.params) ? message.params : {});
  let answer: RpcAnswer;
  try {
    ({ answer } = await sessions.call(request, instance, message.method, params, {
      // A question mid-call: declined (a modern client has no server requests to answer).
      onServerRequest: async (question) => {
        const session = await sessions.sessionFor(request, instance);
        await answerInSession(request, instance, session, question.id, { action: 'decline' }).catch(() => undefined);
        return false;
      },
    }));
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
  if (response.error) return { status: response.error.code === -32601 ? 404 : 200, body: { jsonrpc: '2.0', id: message.id, error: response.error } };
  const result: JsonObject = isObject(response.result) ? { ...response.result } : {};
  result.resultType = 'complete';
  if (CACHEABLE.has(message.method)) {
    result.ttlMs = 0;
    result.cacheScope = 'private';
  }
  // The legacy era's tool-level task flag is not in the modern Tool: the extension says it for the server.
  if (message.method === 'tools/list' && Array.isArray(result.tools)) {
    result.tools = result.tools.map((tool: unknown) => {
      if (!isObject(tool)) return tool;
      const { execution: _execution, ...rest } = tool;
      return rest;
    });
  }
  return { status: 200, body: { jsonrpc: '2.0', id: message.id, result } };
}

/** A modern request's params for a legacy backend: without the per-request envelope. */
export function legacyParams(params: JsonObject): JsonObject {
  const { _meta: meta, ...rest } = params;
  if (!isObject(meta)) return rest;
  const kept = { ...meta };
  for (const key of ENVELOPE_KEYS) delete kept[key];
  return Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
}
