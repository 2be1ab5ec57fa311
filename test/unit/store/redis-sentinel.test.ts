/**
 * The Redis store in sentinel mode, against a master, a replica and a Sentinel the test
 * starts itself: the store contract, then failovers. Whether Sentinel promotes the replica
 * because it was told to (SENTINEL FAILOVER, the old master still up and still a master
 * for some seconds) or because the master stalled, the store must move to the new master
 * by itself, keep what it wrote with waitReplicas, and fail closed while there is none.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { RedisStore } from '../../../src/store/redis-store.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { defineStoreContract } from './store-contract.js';
import { freePort, INSTALL_REDIS, isStoreUnavailable, masterPortOf, redisConfig, redisServerInstalled, RedisServerProcess, reportMissingRedis, startRedisSentinel, untilMasterIs, withClient, type RedisSentinelProcesses } from '../../support/redis-servers.js';
import { waitFor } from '../../support/wait.js';
import { taskRecord } from '../../support/task-records.js';

const NAME = 'tgmaster';
// Sentinel's side: the master is down after 1 s without an answer; a failover may take 5 s.
const SENTINEL_TIMING = { downAfterMs: 1000, failoverTimeoutMs: 5000 };
const COMMAND_TIMEOUT_MS = 300;
// What a loaded two-core runner may add. The point is "about commandTimeout, not until a new
// master is up": a store that waited would take the whole failover (seconds) per call.
const SLACK_MS = 2000;
// From Sentinel naming the new master to the store writing there. The store reconnects
// within a second once it learns of the switch (docs/benchmarks.md has the figures); the old
// master, left alone, is demoted by Sentinel only some 10 s after a SENTINEL FAILOVER, so a
// generous 7 s still tells the two apart.
const FOLLOW_MS = 7000;
/** Store settings for the failover tests: quick to give up on a lost master, and WAIT for the replica. */
const FAILOVER_READY = { commandTimeout: `${COMMAND_TIMEOUT_MS}ms`, connectTimeout: '500ms', waitReplicas: { replicas: 1, timeout: '200ms' } };

if (!redisServerInstalled()) {
  reportMissingRedis('redis-server and redis-cli (to start a Sentinel, a master and a replica)', INSTALL_REDIS);
} else {
  let sequence = 0;

  /**
   * A topology of its own for the describe this is called in (each one that fails a master
   * over needs a fresh one), stopped after it with the stores opened on it.
   */
  const useTopology = (): { readonly topology: RedisSentinelProcesses; readonly open: RedisStore[] } => {
    let started: RedisSentinelProcesses | undefined;
    const open: RedisStore[] = [];
    before(async () => {
      started = await startRedisSentinel(NAME, SENTINEL_TIMING);
    });
    after(async () => {
      await Promise.all(open.map((store) => store.close()));
      await started?.stop();
    });
    return {
      get topology() {
        if (!started) throw new Error('the Sentinel topology is not started yet');
        return started;
      },
      open,
    };
  };

  /** A store on the topology's Sentinel; `open`, if given, tracks it to be closed. */
  const storeOn = async (topology: RedisSentinelProcesses, open?: RedisStore[], overrides: Record<string, unknown> = {}, logs?: string[]): Promise<RedisStore> => {
    const config = redisConfig({ mode: 'sentinel', sentinels: topology.sentinels, name: topology.name, keyPrefix: `s${sequence++}:`, ...overrides });
    const logger = logs ? pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (logs.push(String(chunk)), done()) })) : undefined;
    const store = new RedisStore(config, logger ? { logger } : {});
    try {
      await store.whenReady(5000);
    } catch (error) {
      await store.close();
      throw error;
    }
    open?.push(store);
    return store;
  };

  /**
   * A failover-ready store on the topology holding one task, written and acknowledged by the
   * replica (WAIT): what each failover test then expects to survive.
   */
  const storeHoldingATask = async (setup: ReturnType<typeof useTopology>): Promise<{ store: RedisStore; written: TaskRecord }> => {
    const logs: string[] = [];
    const store = await storeOn(setup.topology, setup.open, FAILOVER_READY, logs);
    const written = taskRecord();
    assert.equal(await store.createTask(written, 10), 'created');
    assert.deepEqual(logs, [], 'the replica acknowledged the record (WAIT)');
    return { store, written };
  };

  describe('Redis store behind Sentinel', () => {
    const setup = useTopology();

    // The contract closes the stores it creates.
    defineStoreContract('redis (sentinel)', { create: () => storeOn(setup.topology) });

    it('survives a second error on its connections to the Sentinels, as on the master\'s', async () => {
      const store = await storeOn(setup.topology, setup.open);
      type Detector = { sentinels: { client: Redis }[] };
      const connector = (store as unknown as { client: { connector: { failoverDetector?: Detector | null } } }).client.connector;
      await waitFor(async () => connector.failoverDetector?.sentinels[0]?.client.status === 'ready', 'the failover detector to reach its Sentinel', 5000);
      const stream = connector.failoverDetector!.sentinels[0]!.client.stream;
      assert.doesNotThrow(() => {
        stream.emit('error', new Error('first'));
        stream.emit('error', new Error('second'));
      });
    });

    it('connects to the master the Sentinel names, not to the replica', async () => {
      const store = await storeOn(setup.topology, setup.open);
      const record = taskRecord();
      assert.equal(await store.createTask(record, 10), 'created');
      await withClient(setup.topology.master.port, async (master) => {
        assert.equal(await master.hget(store.keys.task(record.handle).record, 'handle'), record.handle);
      });
    });

    it('asks the next Sentinel when the first one listed does not answer, and logs the one that did not', async (t) => {
      // ioredis prints errors of connections nobody listens to; the store must listen to all.
      const consoleErrors = t.mock.method(console, 'error', () => undefined);
      // A second Sentinel of the same master, listed after a port where nothing listens.
      const second = await RedisServerProcess.startSentinel(NAME, { host: '127.0.0.1', port: setup.topology.master.port }, SENTINEL_TIMING);
      const nobody = await freePort();
      const logs: string[] = [];
      let store: RedisStore | undefined;
      try {
        store = await storeOn(setup.topology, undefined, { sentinels: [`127.0.0.1:${nobody}`, `127.0.0.1:${second.port}`] }, logs);
        // The failover detector subscribes to every Sentinel listed, the dead one included.
        await waitFor(async () => logs.some((line) => line.includes('a Sentinel is unreachable') && line.includes(`127.0.0.1:${nobody}`)), 'a warning naming the Sentinel that does not answer', 5000);
        const printed = consoleErrors.mock.calls.map((call) => call.arguments.map(String).join(' '));
        assert.deepEqual(printed.filter((line) => line.includes('Unhandled error event')), [], 'nothing printed past the log');
        const record = taskRecord();
        assert.equal(await store.createTask(record, 10), 'created');
        await withClient(setup.topology.master.port, async (master) => {
          assert.equal(await master.hget(store!.keys.task(record.handle).record, 'handle'), record.handle, 'written on the master the second Sentinel named');
        });
      } finally {
        await store?.close();
        await second.stop();
      }
    });

    it('closes every connection it opened, its subscription to the Sentinel included', async () => {
      const sentinelPort = setup.topology.sentinel.port;
      const sockets = () => process.getActiveResourcesInfo().filter((resource) => resource === 'TCPSocketWrap').length;
      const baseline = { subscribers: await subscribersOf(sentinelPort), sockets: sockets() };
      const store = await storeOn(setup.topology);
      try {
        await waitFor(async () => (await subscribersOf(sentinelPort)) > baseline.subscribers, 'the store to subscribe to the Sentinel\'s failover announcements', 5000);
      } finally {
        await store.close();
      }
      // Open sockets would keep the gateway's process alive after a graceful shutdown.
      await waitFor(async () => (await subscribersOf(sentinelPort)) === baseline.subscribers && sockets() <= baseline.sockets, 'every connection of the closed store to be closed', 5000);
    });

    it('announces task changes through the master, and closes its subscriber with the store', async () => {
      const sentinelPort = setup.topology.sentinel.port;
      const sockets = () => process.getActiveResourcesInfo().filter((resource) => resource === 'TCPSocketWrap').length;
      const baseline = { subscribers: await subscribersOf(sentinelPort), sockets: sockets() };
      const prefix = `s${sequence++}:`;
      const [writer, reader] = [await storeOn(setup.topology, undefined, { keyPrefix: prefix }), await storeOn(setup.topology, undefined, { keyPrefix: prefix })];
      try {
        let heard = 0;
        reader.events.subscribe('tg_watched', () => heard++);
        await waitFor(async () => heard === 1, 'the subscription', 5000);
        await writer.events.publish('tg_watched');
        await waitFor(async () => heard === 2, 'the announcement', 5000);
      } finally {
        await Promise.all([writer.close(), reader.close()]);
      }
      await waitFor(async () => (await subscribersOf(sentinelPort)) === baseline.subscribers && sockets() <= baseline.sockets, 'every connection of the closed stores to be closed', 5000);
    });

    it('follows SENTINEL FAILOVER to the promoted replica within seconds, with what it wrote before', async (t) => {
      const { master, replica } = setup.topology;
      const { store, written } = await storeHoldingATask(setup);
      let heard = 0;
      store.events.subscribe(written.handle, () => heard++);
      await waitFor(async () => heard === 1, 'the subscription', 5000);

      await withClient(setup.topology.sentinel.port, (sentinel) => sentinel.call('SENTINEL', 'FAILOVER', NAME));
      const switched = await untilMasterIs(setup.topology.sentinel.port, NAME, replica.port);

      // Writes through the store must reach the new master: the old one is still up and, for
      // a while, still a master that takes writes it will throw away when it is demoted.
      let reachedAfterMs = -1;
      let probes = 0;
      await withClient(replica.port, async (promoted) => {
        await waitFor(async () => {
          const probe = taskRecord({ owner: `probe-${probes++}` });
          if ((await store.createTask(probe, 10).catch(() => 'failed')) !== 'created') return false;
          return (await promoted.exists(store.keys.task(probe.handle).record)) === 1;
        }, `a task created through the store to land on the new master within ${FOLLOW_MS}ms of the switch`, FOLLOW_MS);
        reachedAfterMs = Date.now() - switched;
      });
      const oldRole = await withClient(master.port, async (old) => ((await old.role()) as [string])[0]);
      t.diagnostic(`SENTINEL FAILOVER: writes reached the new master ${reachedAfterMs}ms after Sentinel named it (old master's role then: ${oldRole})`);

      assert.equal(await store.isReady(), true);
      assert.deepEqual(await store.getTask(written.handle), written, 'the task written before the failover survived it');
      const later = taskRecord();
      assert.equal(await store.createTask(later, 10), 'created');
      assert.deepEqual(await store.getTask(later.handle), later);

      // The subscriber followed the switch too: its listener was called (announcements may
      // have been lost), and hears announcements made on the new master.
      await waitFor(async () => heard === 2, 'the listener to be called after the failover', 5000);
      await store.events.publish(written.handle);
      await waitFor(async () => heard === 3, 'an announcement after the failover', 5000);
    });
  });

  describe('Redis store behind Sentinel when the master fails', () => {
    const setup = useTopology();

    it('fails closed within commandTimeout while the master stalls, and serves from the promoted replica by itself', async (t) => {
      const { master, replica } = setup.topology;
      const { store, written } = await storeHoldingATask(setup);

      // SIGSTOP: the master's port still accepts connections but nothing answers, until
      // Sentinel gives up on it (down-after 1 s) and promotes the replica.
      master.pause();
      const stalledAt = Date.now();
      let calls = 0;
      let slowest = 0;
      await withClient(setup.topology.sentinel.port, async (sentinel) => {
        while ((await masterPortOf(sentinel, NAME)) !== replica.port) {
          assert.ok(Date.now() - stalledAt < 15_000, 'Sentinel did not promote the replica within 15 s');
          const started = Date.now();
          await assert.rejects(store.getTask(written.handle), isStoreUnavailable);
          slowest = Math.max(slowest, Date.now() - started);
          calls++;
          await new Promise((r) => setTimeout(r, 50));
        }
      });
      const promotedAt = Date.now();
      assert.ok(calls > 0, 'the store was asked while there was no master');
      assert.ok(slowest < COMMAND_TIMEOUT_MS + SLACK_MS, `a call took ${slowest}ms to be refused`);

      await waitFor(() => store.isReady(), 'the store to be ready on the promoted replica');
      const readyAfterMs = Date.now() - promotedAt;
      t.diagnostic(`stalled master: ${calls} calls refused, slowest in ${slowest}ms (commandTimeout ${COMMAND_TIMEOUT_MS}ms); Sentinel promoted the replica ${promotedAt - stalledAt}ms after the stall; store ready ${readyAfterMs}ms later`);

      assert.deepEqual(await store.getTask(written.handle), written, 'the task written before the failover survived it');
      const later = taskRecord();
      assert.equal(await store.createTask(later, 10), 'created');
      await withClient(replica.port, async (promoted) => {
        assert.equal(await promoted.hget(store.keys.task(later.handle).record, 'handle'), later.handle, 'written to the promoted replica');
      });
    });
  });
}

/** Runs `use` with a plain connection to the server on `port`, closed afterwards. */
/** Clients subscribed to something on the Sentinel on `port`. */
async function subscribersOf(port: number): Promise<number> {
  const list = await withClient(port, (sentinel) => sentinel.call('CLIENT', 'LIST') as Promise<string>);
  return list.split('\n').filter((line) => / sub=[1-9]/.test(line)).length;
}
