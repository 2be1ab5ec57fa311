/** The embedded store: one process, bounded maps, nothing shared. */
import type { Store } from './store.js';
import { TtlMap } from './ttl-map.js';

export interface MemoryStoreOptions {
  maxSessions: number;
  sweepIntervalMs?: number;
}

export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  private readonly sessions: TtlMap<string>;
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: MemoryStoreOptions) {
    this.sessions = new TtlMap(options.maxSessions);
    this.sweeper = setInterval(() => this.sessions.sweep(), options.sweepIntervalMs ?? 60_000);
    this.sweeper.unref();
  }

  async touchSession(upstream: string, sessionId: string, ttlMs: number): Promise<string | undefined> {
    const key = sessionKey(upstream, sessionId);
    const instance = this.sessions.get(key);
    if (instance !== undefined) this.sessions.set(key, instance, ttlMs);
    return instance;
  }

  async setSessionInstance(upstream: string, sessionId: string, instance: string, ttlMs: number): Promise<void> {
    this.sessions.set(sessionKey(upstream, sessionId), instance, ttlMs);
  }

  async deleteSession(upstream: string, sessionId: string): Promise<void> {
    this.sessions.delete(sessionKey(upstream, sessionId));
  }

  async isReady(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.sessions.clear();
  }
}

// Session ids are chosen by backends, so they are namespaced by upstream: two upstreams may
// hand out the same id.
function sessionKey(upstream: string, sessionId: string): string {
  return `${upstream}\u0000${sessionId}`;
}
