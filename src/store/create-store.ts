/**
 * The store the policy asks for (`store.type`). buildGateway calls this unless a store is
 * passed in; a test or an embedding that wants the store beforehand (to wait for Redis, or to
 * share one store between gateways) calls it itself and passes the result as deps.store.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { Store } from './store.js';

/** 2025-era sessions remembered by the memory store; the oldest make room beyond it. */
const MAX_MEMORY_SESSIONS = 100_000;

export function createStore(config: Pick<Config, 'store' | 'tasks'>, logger: Logger): Store {
  if (config.store.type === 'redis') return new RedisStore(config.store, { logger });
  return new MemoryStore({ maxSessions: MAX_MEMORY_SESSIONS, maxTasks: config.tasks.maxRecords });
}
