/**
 * The `routing` stage (DESIGN.md §2, step 5): which instance of the route's upstream gets
 * this request. A 2025-era session stays on the instance that answered its `initialize`;
 * everything else is new work for the balancer. (Task requests join with task takeover.)
 */
import { GatewayError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { McpMessage } from '../mcp/jsonrpc.js';
import type { Instance, InstancePool } from './balancer.js';

export interface SessionPolicy {
  /** How long a session's stickiness outlives its last request. */
  readonly idleTtlMs: number;
}

/** What the routing stage reads of a request: its route's instances, its session, what refused it. */
export interface RoutedRequest {
  readonly route: { readonly pool: InstancePool; readonly sessions: SessionPolicy };
  /** The 2025-era session the request belongs to (Mcp-Session-Id), if any. */
  readonly sessionId?: string;
  /** Instances that refused this request's connection (fail-over of new work). */
  readonly refused?: ReadonlySet<string>;
}

export async function selectInstanceFor(request: RoutedRequest, store: Store): Promise<Instance> {
  const { pool, sessions: policy } = request.route;
  const sessionId = request.sessionId;
  // With one instance there is nothing to stick to: the store is not asked, so sessions on
  // such an upstream keep working while the store is away, at no round trip.
  const sole = pool.soleInstance();
  if (sole) return sole;
  if (sessionId !== undefined) {
    const url = await store.touchSession(pool.upstream, sessionId, policy.idleTtlMs);
    // No record: a session begun while the upstream had one instance (a reload added more).
    const recorded = url === undefined ? pool.unrecordedSessionsOn : pool.findInstance(url);
    if (recorded) return recorded;
    // A session the gateway never saw initialised cannot be placed among several instances;
    // the spec's answer is 404 (the client re-initialises).
    throw new GatewayError('TG_ERR_SESSION_NOT_FOUND');
  }
  const instance = pool.selectInstance(Date.now(), request.refused);
  if (!instance) throw new GatewayError('TG_ERR_UPSTREAM_UNAVAILABLE');
  return instance;
}

/** Whether the failed connection to this request's instance may be retried on another. */
export function canFailOver(request: { readonly sessionId?: string; readonly task?: unknown; readonly upstreamHeaders?: unknown }): boolean {
  // A session, a task, or the answer to a server's request lives on one instance; only new
  // work may move.
  return request.sessionId === undefined && request.task === undefined && request.upstreamHeaders === undefined;
}

/** Session bookkeeping once the upstream has answered. */
export async function recordSessionOutcome(
  request: RoutedRequest & { readonly httpMethod: string; readonly instance?: Instance; readonly mcp?: { readonly message: McpMessage | undefined } },
  statusCode: number,
  responseSessionId: string | undefined,
  store: Store,
): Promise<void> {
  const { pool, sessions: policy } = request.route;
  if (pool.soleInstance()) return; // no stickiness to keep (see selectInstanceFor)
  const instance = request.instance;
  const message = request.mcp?.message;
  const ok = statusCode >= 200 && statusCode < 300;
  if (ok && instance && responseSessionId && message?.kind === 'request' && message.method === 'initialize') {
    await store.setSessionInstance(pool.upstream, responseSessionId, instance.url, policy.idleTtlMs);
    return;
  }
  const sessionId = request.sessionId;
  if (sessionId === undefined) return;
  // DELETE ends the session; 404 means the backend has forgotten it (spec: re-initialise).
  if ((request.httpMethod === 'DELETE' && ok) || statusCode === 404) {
    await store.deleteSession(pool.upstream, sessionId);
  }
}
