/**
 * store.waitReplicas: a creation resolves once a replica holds the record (WAIT), and a
 * shortfall is logged rather than failing a task that was written. A master and a replica
 * are started by the test.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import pino from 'pino';
import { RedisStore } from '../../../src/store/redis-store.js';
import { INSTALL_REDIS, redisConfig, redisServerInstalled, RedisServerProcess, reportMissingRedis } from '../../support/redis-servers.js';
import { waitFor } from '../../support/wait.js';
import { taskRecord } from '../../support/task-records.js';

if (!redisServerInstalled()) {
  reportMissingRedis('redis-server (to start a master and a replica)', INSTALL_REDIS);
} else {
  describe('Redis store with waitReplicas', () => {
    let master: RedisServerProcess;
    let replica: RedisServerProcess;
    let store: RedisStore;
    const warnings: string[] = [];

    before(async () => {
      // Without the delay Redis 7 waits 5 s before it first syncs the replica.
      master = await RedisServerProcess.start(undefined, ['--repl-diskless-sync-delay', '0']);
      replica = await RedisServerProcess.start(undefined, ['--replicaof', '127.0.0.1', String(master.port)]);
      const probe = new Redis(`redis://127.0.0.1:${master.port}`);
      try {
        // The master lists the replica as online before the replica has loaded the initial
        // sync; only then does it acknowledge writes.
        await waitFor(async () => {
          await probe.set('sync-probe', '1');
          return (await probe.wait(1, 100)) === 1;
        });
        await probe.del('sync-probe');
      } finally {
        probe.disconnect();
      }
      const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (warnings.push(String(chunk)), done()) }));
      store = new RedisStore(redisConfig({ url: `redis://127.0.0.1:${master.port}`, waitReplicas: { replicas: 1, timeout: '200ms' } }), { logger });
      await store.whenReady();
    });
    after(async () => {
      await store?.close();
      await replica?.stop();
      await master?.stop();
    });

    it('resolves a creation once the replica has the record', async () => {
      const record = taskRecord();
      assert.equal(await store.createTask(record, 10), 'created');
      const onReplica = new Redis(`redis://127.0.0.1:${replica.port}`);
      try {
        assert.equal(await onReplica.hget(store.keys.task(record.handle).record, 'handle'), record.handle, 'readable on the replica at once');
      } finally {
        onReplica.disconnect();
      }
      assert.deepEqual(warnings, []);
    });

    it('still creates the task when no replica acknowledges in time, and says so in the log', async () => {
      await replica.stop();
      const started = Date.now();
      assert.equal(await store.createTask(taskRecord(), 10), 'created');
      assert.ok(Date.now() - started >= 190, 'waited for the acknowledgement');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /fewer replicas than store.waitReplicas asks/);
    });
  });
}

