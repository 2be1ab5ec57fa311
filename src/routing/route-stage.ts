/**
 * The `routing` stage (DESIGN.md §2, step 5): which instance of the route's upstream gets
 * this request. A 2025-era session stays on the instance that answered its `initialize`;
 * everything else is new work for the balancer. (Task requests join with task takeover.)
 */
import type { FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { Instance } from './balancer.js';

export interface SessionPolicy {
  /** How long a session's stickiness outlives its last request. */
  readonly idleTtlMs: number;
}

export async function selectInstanceFor(request: FastifyRequest, store: Store, policy: SessionPolicy): Promise<Instance> {
  const { pool } = request.exchange.route;
  const sessionId = request.exchange.sessionId;
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
  const instance = pool.selectInstance(Date.now(), request.exchange.refused);
  if (!instance) throw new GatewayError('TG_ERR_UPSTREAM_UNAVAILABLE');
  return instance;
}

/** Whether the failed connection to this request's instance may be retried on another. */
export function canFailOver(request: FastifyRequest): boolean {
  // A session, a task, or the answer to a server's request lives on one instance; only new
  // work may move.
  return request.exchange.sessionId === undefined && request.exchange.task === undefined && request.exchange.upstreamHeaders === undefined;
}

/** Session bookkeeping once the upstream has answered. */
export async function recordSessionOutcome(
  request: FastifyRequest,
  statusCode: number,
  responseSessionId: string | undefined,
  store: Store,
  policy: SessionPolicy,
): Promise<void> {
  const { pool } = request.exchange.route;
  if (pool.soleInstance()) return; // no stickiness to keep (see selectInstanceFor)
  const instance = request.exchange.instance;
  const message = request.exchange.mcp?.message;
  const ok = statusCode >= 200 && statusCode < 300;
  if (ok && instance && responseSessionId && message?.kind === 'request' && message.method === 'initialize') {
    await store.setSessionInstance(pool.upstream, responseSessionId, instance.url, policy.idleTtlMs);
    return;
  }
  const sessionId = request.exchange.sessionId;
  if (sessionId === undefined) return;
  // DELETE ends the session; 404 means the backend has forgotten it (spec: re-initialise).
  if ((request.method === 'DELETE' && ok) || statusCode === 404) {
    await store.deleteSession(pool.upstream, sessionId);
  }
}
