/**
 * What one backend instance serves, asked rather than guessed (DESIGN.md §12): a 2026-07-28
 * `server/discover` (does it declare the io.modelcontextprotocol/tasks extension?) and a
 * 2025-11-25 `initialize` (does it declare `capabilities.tasks.requests.tools.call`, and which
 * tools say `execution.taskSupport` in tools/list?). The 2025 session the probe opens is closed
 * again at once. An answer that is an error, or a 4xx, says "not served"; no answer at all
 * (refused, reset, timed out) says nothing, and the probe is made again later.
 */
import { isObject } from '../mcp/json.js';
import { TASKS_EXTENSION } from '../mcp/era.js';
import type { Send } from '../upstream/gateway-send.js';
import { headerValue } from '../upstream/gateway-replies.js';
import { frameLegacy, frameLegacyNotification, frameModern, GATEWAY_CLIENT_INFO, LEGACY_VERSION, legacyHeaders, type FramedRequest, type LegacyFraming } from '../upstream/request-framer.js';
import { readAnswer, type ExchangeLimits, type RpcAnswer } from './rpc-exchange.js';

/** tools/list pages read at most, so a backend that pages forever cannot hold the probe. */
const MAX_TOOL_PAGES = 20;

export interface ProbeTarget {
  readonly upstream: string;
  /** The instance's origin, as the policy lists it. */
  readonly origin: string;
  /**
   * The way to the instance for the gateway itself (BackendRoute.asGateway): the route's own
   * credentials (no principal: a probe speaks for no one) and the gateway's call timeout.
   */
  readonly send: Send;
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
  let answer: RpcAnswer;
  try {
    answer = await ask(target, frameModern('server/discover', {}, { capabilities: {} }), limits);
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
  const params = { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: GATEWAY_CLIENT_INFO };
  let answer: RpcAnswer;
  try {
    answer = await ask(target, frameLegacy('initialize', params, {}), limits);
  } catch {
    return {};
  }
  if (answer.status >= 500) return {};
  if (answer.status === 401 || answer.status === 403) return { authRefused: true };
  const result = answer.response?.result;
  if (!isObject(result)) return { legacy: false, legacyTasks: false };
  const session: LegacyFraming = {
    version: typeof result.protocolVersion === 'string' ? result.protocolVersion : LEGACY_VERSION,
    session: headerValue(answer.headers['mcp-session-id']),
  };
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  const tasks = isObject(capabilities.tasks) ? capabilities.tasks : {};
  const legacyTasks = isObject(tasks.requests) && isObject(tasks.requests.tools) && isObject(tasks.requests.tools.call);
  try {
    if (!legacyTasks) return { legacy: true, legacyTasks: false };
    await target.send(frameLegacyNotification('notifications/initialized', session), (reply) => reply.body.dump());
    return { legacy: true, legacyTasks: true, legacyTools: await listTaskSupport(target, session, limits) };
  } catch {
    // The session answered initialize but not what followed: tasks yes, tools unknown.
    return { legacy: true, legacyTasks: true };
  } finally {
    if (session.session) await closeSession(target, session);
  }
}

async function listTaskSupport(target: ProbeTarget, session: LegacyFraming, limits: ExchangeLimits): Promise<Record<string, string>> {
  const tools: Record<string, string> = {};
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const result = (await ask(target, frameLegacy('tools/list', cursor === undefined ? {} : { cursor }, session), limits)).response?.result;
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

/** Sends one framed request of the probe's and reads the answer to it. */
function ask(target: ProbeTarget, framed: FramedRequest, limits: ExchangeLimits): Promise<RpcAnswer> {
  return target.send(framed, readAnswer(framed.id, limits));
}

async function closeSession(target: ProbeTarget, session: LegacyFraming): Promise<void> {
  try {
    await target.send({ method: 'DELETE', headers: legacyHeaders(session) }, (reply) => reply.body.dump());
  } catch {
    // Best effort: the backend forgets an idle session by itself.
  }
}
