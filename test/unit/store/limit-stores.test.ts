/** The LimitStore contract against the memory store and the shared Redis at 127.0.0.1:6379. */
import { after } from 'node:test';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { defineLimitStoreContract } from './limit-store-contract.js';
import { answersPing, reportMissingRedis, SHARED_REDIS, SharedRedisStores, START_SHARED_REDIS } from '../../support/redis-servers.js';

defineLimitStoreContract('memory', { create: async () => new MemoryStore({ maxSessions: 10, maxTasks: 10 }) });

if (!(await answersPing(SHARED_REDIS.port, SHARED_REDIS.host))) {
  reportMissingRedis(`Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port}`, START_SHARED_REDIS);
} else {
  const stores = new SharedRedisStores('taskgate-test-limits');
  after(() => stores.close());
  defineLimitStoreContract('redis (standalone)', { create: () => stores.open() });
}
