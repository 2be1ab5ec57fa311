/**
 * The state the gateway shares between requests (and, with the Redis store, between
 * replicas). Every operation is async so both stores keep one signature.
 *
 * This first cut holds session-to-instance stickiness; task records, poll state and
 * counters join it with task takeover.
 */
export interface Store {
  readonly kind: 'memory' | 'redis';
  /** The instance of a 2025-era session, refreshing its idle deadline to `ttlMs` from now. */
  touchSession(upstream: string, sessionId: string, ttlMs: number): Promise<string | undefined>;
  /** Records the instance that answered `initialize` for a 2025-era session; forgotten after `ttlMs` unused. */
  setSessionInstance(upstream: string, sessionId: string, instance: string, ttlMs: number): Promise<void>;
  deleteSession(upstream: string, sessionId: string): Promise<void>;
  /** Whether the store can serve requests now (readiness). */
  isReady(): Promise<boolean>;
  close(): Promise<void>;
}
