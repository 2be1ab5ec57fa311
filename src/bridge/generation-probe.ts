/**
 * What one backend instance serves, asked rather than guessed (DESIGN.md §12): a 2026-07-28
 * `server/discover` (does it declare the io.modelcontextprotocol/tasks extension?) and a
 * 2025-11-25 `initialize` (does it declare `capabilities.tasks.requests.tools.call`, and which
 * tools say `execution.taskSupport` in tools/list?). The 2025 session the probe opens is closed
 * again at once. An answer that is an error, or a 4xx, says "not served"; no answer at all
 * (refused, reset, timed out) says nothing, and the probe is made again later.
 */
import { isObject, type JsonObject } from '../mcp/json.js';
import { MODERN_VERSION, TASKS_EXTENSION } from '../mcp/era.js';
import { exchange, headerValue, newRequestId, type ExchangeLimits, type ExchangeTarget, type RpcAnswer } from './rpc-exchange.js';

export const LEGACY_VERSION = '2025-11-25';
export const BRIDGE_CLIENT_INFO = { name: 'taskgate', version: '0' };
/** tools/list pages read at most, so a backend that pages forever cannot hold the probe. */
const MAX_TOOL_PAGES = 20;

export interface ProbeTarget extends ExchangeTarget {
  readonly upstream: string;
  /** The route's credentials for the gateway itself (no principal: a probe speaks for no one). */
  readonly headers: Record<string, string>;
}

/** What an instance serves; undefined fields: the probe got no answer to that question. */
export interface InstanceGenerations {
  /** 2026-07-28 with the tasks extension. */
  readonly modernTasks?: boolean;
  /** Whether it answers 2026-07-28 requests at all. */
  readonly modern?: boolean;
  /** 2025-11-25 tasks for tools/call. */
  readonly legacyTasks?: boolean;
  /** Whether it answers 2025 initialize at all. */
  readonly legacy?: boolean;
  /** 2025: each tool's execution.taskSupport ('forbidden' when absent), when legacyTasks. */
  readonly legacyTools?: Readonly<Record<string, string>>;
  /** The backend refused the probe's credentials (401/403): nothing is known, and asking again would not help. */
  readonly authRefused?: boolean;
}

export async function probeInstance(target: ProbeTarget, limits: ExchangeLimits): Promise<InstanceGenerations> {
  const [modern, legacy] = await Promise.all([probeModern(target, limits), probeLegacy(target, limits)]);
  return { ...modern, ...legacy, ...(modern.authRefused || legacy.authRefused ? { authRefused: true } : {}) };
}

async function probeModern(target: ProbeTarget, limits: ExchangeLimits): Promise<Pick<InstanceGenerations, 'modern' | 'modernTasks' | 'authRefused'>> {
  const id = newRequestId();
  const params = { _meta: modernEnvelope({}) };
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'server/discover', params });
  let answer: RpcAnswer;
  try {
    answer = await exchange(target, id, body, { ...target.headers, 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': 'server/discover' }, limits);
  } catch {
    return {};
  }
  const result = answer.response?.result;
  if (answer.status >= 500) return {};
  if (answer.status === 401 || answer.status === 403) return { authRefused: true };
  if (!isObject(result)) return { modern: false, modernTasks: false };
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  const extensions = isObject(capabilities.extensions) ? capabilities.extensions : {};
  return { modern: true, modernTasks: isObject(extensions[TASKS_EXTENSION]) };
}

async function probeLegacy(target: ProbeTarget, limits: ExchangeLimits): Promise<Pick<InstanceGenerations, 'legacy' | 'legacyTasks' | 'legacyTools' | 'authRefused'>> {
  const id = newRequestId();
  const params = { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: BRIDGE_CLIENT_INFO };
  let answer: RpcAnswer;
  try {
    answer = await exchange(target, id, JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params }), target.headers, limits);
  } catch {
    return {};
  }
  if (answer.status >= 500) return {};
  if (answer.status === 401 || answer.status === 403) return { authRefused: true };
  const result = answer.response?.result;
  if (!isObject(result)) return { legacy: false, legacyTasks: false };
  const session = headerValue(answer.headers['mcp-session-id']);
  const version = typeof result.protocolVersion === 'string' ? result.protocolVersion : LEGACY_VERSION;
  const sessionHeaders: Record<string, string> = { ...target.headers, 'mcp-protocol-version': version };
  if (session) sessionHeaders['mcp-session-id'] = session;
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  const tasks = isObject(capabilities.tasks) ? capabilities.tasks : {};
  const legacyTasks = isObject(tasks.requests) && isObject(tasks.requests.tools) && isObject(tasks.requests.tools.call);
  try {
    if (!legacyTasks) return { legacy: true, legacyTasks: false };
    await notify(target, sessionHeaders, 'notifications/initialized', limits);
    return { legacy: true, legacyTasks: true, legacyTools: await listTaskSupport(target, sessionHeaders, limits) };
  } catch {
    // The session answered initialize but not what followed: tasks yes, tools unknown.
    return { legacy: true, legacyTasks: true };
  } finally {
    if (session) await closeSession(target, sessionHeaders, limits);
  }
}

async function listTaskSupport(target: ProbeTarget, headers: Record<string, string>, limits: ExchangeLimits): Promise<Record<string, string>> {
  const tools: Record<string, string> = {};
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const id = newRequestId();
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params: cursor === undefined ? {} : { cursor } });
    const result = (await exchange(target, id, body, headers, limits)).response?.result;
    if (!isObject(result) || !Array.isArray(result.tools)) break;
    for (const tool of result.tools) {
      if (!isObject(tool) || typeof tool.name !== 'string') continue;
      const support = isObject(tool.execution) ? tool.execution.taskSupport : undefined;
      tools[tool.name] = typeof support === 'string' ? support : 'forbidden';
    }
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  return tools;
}

async function notify(target: ProbeTarget, headers: Record<string, string>, method: string, limits: ExchangeLimits): Promise<void> {
  const reply = await target.dispatcher.request({
    origin: target.origin,
    path: target.path,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', method }),
    headersTimeout: limits.timeoutMs,
    bodyTimeout: limits.timeoutMs,
  });
  await reply.body.dump();
}

async function closeSession(target: ProbeTarget, headers: Record<string, string>, limits: ExchangeLimits): Promise<void> {
  try {
    const reply = await target.dispatcher.request({ origin: target.origin, path: target.path, method: 'DELETE', headers, headersTimeout: limits.timeoutMs, bodyTimeout: limits.timeoutMs });
    await reply.body.dump();
  } catch {
    // Best effort: the backend forgets an idle session by itself.
  }
}

/** The 2026-07-28 per-request `_meta` the gateway sends as a client, with these capabilities. */
export function modernEnvelope(clientCapabilities: JsonObject): JsonObject {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
    'io.modelcontextprotocol/clientInfo': BRIDGE_CLIENT_INFO,
    'io.modelcontextprotocol/clientCapabilities': clientCapabilities,
  };
}
