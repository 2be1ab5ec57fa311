/**
 * 2025-11-25 sessions the gateway holds to a backend on a 2026-07-28 client's behalf
 * (DESIGN.md §12): one per principal, instance and replica, never shared between principals
 * (an SDK 1.x server binds each task to the session that made it, so a shared session would
 * let one principal's tasks be reached through another's). A task records the session it lives
 * in, so any replica reaches it there; a session the backend lost (HTTP 404) is opened again
 * for new work, and the tasks it held end failed, saying so (backend-poll.ts). Sessions are
 * kept for as long as the gateway runs: the tasks in them need them for their whole lifetime.
 */
import type { TaskRequest } from '../tasks/task-request.js';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { Instance } from '../routing/balancer.js';
import { ownerOf } from '../tasks/task-context.js';
import { headerValue } from '../upstream/gateway-replies.js';
import { frameLegacy, frameLegacyAnswer, frameLegacyNotification, GATEWAY_CLIENT_INFO, LEGACY_VERSION } from '../upstream/request-framer.js';
import { sendToInstance } from './modern-call.js';
import type { ExchangeOptions, RpcAnswer } from './rpc-exchange.js';

export interface LegacySession {
  /** Undefined for a backend that serves 2025 without sessions. */
  readonly id?: string;
  readonly version: string;
  /** What its initialize said: the backend's capabilities, info and instructions. */
  readonly initialize: JsonObject;
}

/** Most sessions kept per replica; past it the oldest is forgotten (its tasks keep their own). */
const MAX_SESSIONS = 10_000;

export class LegacySessions {
  private readonly sessions = new Map<string, Promise<LegacySession>>();

  /** The principal's session on `instance`, opened if there is none (yet, or any more). */
  sessionFor(request: TaskRequest, instance: Instance): Promise<LegacySession> {
    const name = sessionKey(request, instance);
    let session = this.sessions.get(name);
    if (!session) {
      session = openSession(request, instance);
      this.sessions.delete(name);
      if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
      this.sessions.set(name, session);
      // A session that could not be opened is not kept: the next request tries again.
      session.catch(() => {
        if (this.sessions.get(name) === session) this.sessions.delete(name);
      });
    }
    return session;
  }

  /**
   * `method` in the principal's session; a session the backend no longer knows (404) is
   * opened again once. The answer and the session it was sent in.
   */
  async call(request: TaskRequest, instance: Instance, method: string, params: JsonObject, options?: ExchangeOptions): Promise<{ answer: RpcAnswer; session: LegacySession }> {
    for (let attempt = 0; ; attempt++) {
      const session = await this.sessionFor(request, instance);
      const answer = await callInSession(request, instance, session, method, params, options);
      if (answer.status !== 404 || attempt > 0) return { answer, session };
      this.forget(request, instance, session);
    }
  }

  private forget(request: TaskRequest, instance: Instance, session: LegacySession): void {
    const name = sessionKey(request, instance);
    void this.sessions.get(name)?.then((held) => {
      if (held === session && this.sessions.get(name)) this.sessions.delete(name);
    });
    this.sessions.delete(name);
  }
}

/** `method` in `session` (a task's recorded one, or the principal's). */
export function callInSession(
  request: TaskRequest,
  instance: Instance,
  session: Pick<LegacySession, 'id' | 'version'>,
  method: string,
  params: JsonObject,
  options?: ExchangeOptions,
  signal?: Dispatcher.RequestOptions['signal'],
): Promise<RpcAnswer> {
  return sendToInstance(request, instance, frameLegacy(method, params, framingOf(session)), signal ?? request.abort, options);
}

/** POSTs a JSON-RPC response (the answer to a backend's question) in `session`. */
export async function answerInSession(request: TaskRequest, instance: Instance, session: Pick<LegacySession, 'id' | 'version'>, id: string | number, result: JsonObject): Promise<number> {
  // A response has no answer: the exchange ends at the backend's 202.
  const answer = await sendToInstance(request, instance, frameLegacyAnswer(id, result, framingOf(session)));
  return answer.status;
}

async function openSession(request: TaskRequest, instance: Instance): Promise<LegacySession> {
  // Elicitation is declared so that a task's questions can be relayed (as 2026 inputRequests).
  const params = { protocolVersion: LEGACY_VERSION, capabilities: { elicitation: {} }, clientInfo: GATEWAY_CLIENT_INFO };
  const answer = await sendToInstance(request, instance, frameLegacy('initialize', params, {}), undefined);
  const result = answer.response?.result;
  if (!isObject(result)) throw new GatewayError('TG_ERR_BAD_GATEWAY', { detail: `the backend did not open a 2025-11-25 session (HTTP ${answer.status})` });
  const session: LegacySession = {
    id: headerValue(answer.headers['mcp-session-id']),
    version: typeof result.protocolVersion === 'string' ? result.protocolVersion : LEGACY_VERSION,
    initialize: result,
  };
  await sendToInstance(request, instance, frameLegacyNotification('notifications/initialized', framingOf(session)));
  return session;
}

function framingOf(session: Pick<LegacySession, 'id' | 'version'>): { version: string; session?: string } {
  return { version: session.version, session: session.id };
}

function sessionKey(request: TaskRequest, instance: Instance): string {
  return `${request.route.pool.upstream}\u0000${instance.url}\u0000${ownerOf(request)}`;
}
