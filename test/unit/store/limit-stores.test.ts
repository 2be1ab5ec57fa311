/** The LimitStore contract against the memory store and the shared Redis at 127.0.0.1:6379. */
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import { Redis } from 'ioredis';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { RedisStore } from '../../../src/store/redis-store.js';
import { defineLimitStoreContract } from './limit-store-contract.js';
import { answersPing, redisConfig, reportMissingRedis, SHARED_REDIS, START_SHARED_REDIS } from '../../support/redis-servers.js';

defineLimitStoreContract('memory', { create: async () => new MemoryStore({ maxSessions: 10, maxTasks: 10 }) });

const URL = `redis://${SHARED_REDIS.host}:${SHARED_REDIS.port}`;
if (!(await answersPing(SHARED_REDIS.port, SHARED_REDIS.host))) {
  reportMissingRedis(`Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port}`, START_SHARED_REDIS);
} else {
  const root = `taskgate-test-limits:${process.pid}-${randomBytes(4).toString('hex')}:`;
  let sequence = 0;
  after(async () => {
    const raw = new Redis(URL);
    const keys = await raw.keys(`${root}*`);
    if (keys.length > 0) await raw.del(...keys);
    await raw.quit();
  });
  defineLimitStoreContract('redis (standalone)', {
    create: async () => {
      const store = new RedisStore(redisConfig({ url: URL, keyPrefix: `${root}${sequence++}:` }));
      await store.whenReady();
      return store;
    },
  });
}
