/**
 * Fail closed (DESIGN.md §4): with its Redis stalled or gone, the store refuses every call
 * quickly with the error the gateway answers 503 for, holds nothing while it does, reports
 * itself not ready, and serves again once Redis returns, with no new store.
 *
 * The test runs its own redis-server on a free port, so it can pause, kill and restart it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Redis } from 'ioredis';
import { createRedisClient } from '../../../src/store/redis-connection.js';
import { RedisStore } from '../../../src/store/redis-store.js';
import { INSTALL_REDIS, isStoreUnavailable, redisConfig, redisServerInstalled, RedisServerProcess, reportMissingRedis } from '../../support/redis-servers.js';
import { waitFor } from '../../support/wait.js';
import { scopeOf, taskRecord } from '../../support/task-records.js';

const COMMAND_TIMEOUT_MS = 200;
// What a loaded two-core runner may add. The point is "about commandTimeout, not until Redis
// is back": a store that waited for Redis would hang here until the test's own timeout.
const SLACK_MS = 2000;
// A store that queued calls for Redis's return would refuse them only after its
// commandTimeout; with this one that is 10 s, far from "at once" even on a loaded runner.
const PATIENT_COMMAND_TIMEOUT_MS = 10_000;

if (!redisServerInstalled()) {
  reportMissingRedis('redis-server (to stop and restart one)', INSTALL_REDIS);
} else {
  describe('Redis store when Redis fails', () => {
    let server: RedisServerProcess;
    let store: RedisStore;

    before(async () => {
      server = await RedisServerProcess.start();
      store = new RedisStore(redisConfig({ url: `redis://127.0.0.1:${server.port}`, commandTimeout: `${COMMAND_TIMEOUT_MS}ms`, connectTimeout: '500ms' }));
      await store.whenReady();
    });
    after(async () => {
      await store?.close();
      await server?.stop();
    });

    it('survives a connection that reports two errors (ioredis listens for one), and connects again', async () => {
      const client = createRedisClient(redisConfig({ url: `redis://127.0.0.1:${server.port}` })) as Redis;
      client.on('error', () => undefined);
      try {
        await waitFor(async () => client.status === 'ready');
        const stream = client.stream;
        // As a TLS socket can after a refused handshake; without a listener of ours the second
        // 'error' throws here, which in the gateway is an uncaught exception.
        assert.doesNotThrow(() => {
          stream.emit('error', new Error('first'));
          stream.emit('error', new Error('second'));
        });
        stream.destroy();
        await waitFor(async () => client.status === 'ready' && client.stream !== stream);
        assert.equal(await client.ping(), 'PONG');
      } finally {
        client.disconnect();
      }
    });

    it('rejects within commandTimeout while Redis stalls, and serves again when it resumes', async (t) => {
      const record = taskRecord();
      assert.equal(await store.createTask(record, 10), 'created');
      server.pause();
      try {
        const started = Date.now();
        await assert.rejects(store.getTask(record.handle), isStoreUnavailable);
        const elapsed = Date.now() - started;
        assert.ok(elapsed < COMMAND_TIMEOUT_MS + SLACK_MS, `rejected after ${elapsed}ms`);
        t.diagnostic(`stalled Redis: rejected after ${elapsed}ms (commandTimeout ${COMMAND_TIMEOUT_MS}ms)`);
        assert.equal(await store.isReady(), false);
        // The stalled connection is dropped, so later calls do not wait behind it.
        const again = Date.now();
        await assert.rejects(store.openPoll(record.handle, scopeOf(record), Date.now(), { toleranceMs: 0, abuseFactor: 5 }), isStoreUnavailable);
        assert.ok(Date.now() - again < COMMAND_TIMEOUT_MS + SLACK_MS);
      } finally {
        server.resume();
      }
      await waitFor(() => store.isReady());
      assert.deepEqual(await store.getTask(record.handle), record);
    });

    it('rejects at once while Redis is down, holds no memory for it, and recovers on the same port', async (t) => {
      const port = server.port;
      const patient = new RedisStore(redisConfig({ url: `redis://127.0.0.1:${port}`, commandTimeout: `${PATIENT_COMMAND_TIMEOUT_MS}ms`, connectTimeout: '500ms' }));
      try {
        await patient.whenReady();
        await server.stop();
        await waitFor(async () => !(await store.isReady()) && !(await patient.isReady()));
        let slowestPatient = 0;
        for (let i = 0; i < 20; i++) {
          const started = Date.now();
          await assert.rejects(patient.createTask(taskRecord(), 10), isStoreUnavailable);
          slowestPatient = Math.max(slowestPatient, Date.now() - started);
        }
        assert.ok(slowestPatient < PATIENT_COMMAND_TIMEOUT_MS / 4, `a call took ${slowestPatient}ms to be refused: it waited for Redis instead of failing at once`);
      } finally {
        await patient.close();
      }

      let slowest = 0;
      for (let i = 0; i < 20; i++) {
        const started = Date.now();
        await assert.rejects(store.createTask(taskRecord(), 10), isStoreUnavailable);
        slowest = Math.max(slowest, Date.now() - started);
      }

      // Heap after collection, once warmed up, across 20,000 refused calls. Had they queued
      // for Redis's return, the 10,000 creations alone (a record and some thirty arguments
      // each) would hold well over 10 MiB; the allowance is for the collector's own noise.
      const gc = exposeGc();
      const refuseMany = async (count: number) => {
        const results = await Promise.allSettled(Array.from({ length: count }, (_, i) => (i % 2 ? store.getTask('x'.repeat(32)) : store.createTask(taskRecord(), 10))));
        assert.ok(results.every((r) => r.status === 'rejected' && isStoreUnavailable(r.reason)), 'every call fails closed');
      };
      for (let round = 0; round < 2; round++) {
        await refuseMany(5000);
        gc();
      }
      const heapBefore = process.memoryUsage().heapUsed;
      for (let round = 0; round < 4; round++) {
        await refuseMany(5000);
        gc();
      }
      const grown = process.memoryUsage().heapUsed - heapBefore;
      assert.ok(grown < 4 * 1024 * 1024, `heap grew by ${grown} bytes while Redis was down`);
      t.diagnostic(`Redis down: calls refused within ${slowest}ms; heap after 20000 refused calls ${grown >= 0 ? '+' : ''}${grown} bytes`);
      assert.equal(await store.isReady(), false);

      server = await RedisServerProcess.start(port);
      const restarted = Date.now();
      await waitFor(() => store.isReady());
      t.diagnostic(`ready again ${Date.now() - restarted}ms after redis-server restarted on port ${port}`);
      const record = taskRecord();
      assert.equal(await store.createTask(record, 10), 'created');
      assert.deepEqual(await store.getTask(record.handle), record);
    });
  });
}

/** The collector, so heap sizes are compared after collection, not before it. */
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
