/**
 * The store contract against a Redis Cluster of three masters the test starts itself: every
 * script must name only keys of one hash slot, and the operations that span slots (creation,
 * deletion, the sweep, listing) must still behave like the memory store.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import pino from 'pino';
import { createRedisClient } from '../../../src/store/redis-connection.js';
import { RedisStore } from '../../../src/store/redis-store.js';
import { defineProvidedContract } from './provided-contract.js';
import { defineStoreContract } from './store-contract.js';
import { INSTALL_REDIS, redisConfig, redisServerInstalled, reportMissingRedis, startRedisCluster, type RedisClusterProcesses } from '../../support/redis-servers.js';
import { waitFor } from '../../support/wait.js';
import { taskRecord, providedRecord } from '../../support/task-records.js';

if (!redisServerInstalled()) {
  reportMissingRedis('redis-server and redis-cli (to start a Redis Cluster)', INSTALL_REDIS);
} else {
  describe('Redis store on a Redis Cluster', () => {
    let cluster: RedisClusterProcesses | undefined;
    let sequence = 0;
    const newStore = async (keyPrefix = `t${sequence++}:`): Promise<RedisStore> => {
      const store = new RedisStore(redisConfig({ mode: 'cluster', nodes: cluster!.nodes.map((n) => `${n.host}:${n.port}`), keyPrefix }));
      await store.whenReady(5000);
      return store;
    };

    before(async () => {
      cluster = await startRedisCluster(3);
    });
    after(() => cluster?.stop());

    defineStoreContract('redis (cluster)', { create: () => newStore() });
    defineProvidedContract('redis (cluster)', { create: () => newStore() });

    it('survives a node connection that reports two errors (ioredis listens for one)', async () => {
      const client = createRedisClient(redisConfig({ mode: 'cluster', nodes: cluster!.nodes.map((n) => `${n.host}:${n.port}`) })) as Cluster;
      client.on('error', () => undefined);
      try {
        await waitFor(async () => client.status === 'ready', 'the cluster client to be ready', 5000);
        const [node] = client.nodes('master');
        assert.equal(await node!.ping(), 'PONG');
        const stream = node!.stream;
        assert.doesNotThrow(() => {
          stream.emit('error', new Error('first'));
          stream.emit('error', new Error('second'));
        });
      } finally {
        client.disconnect();
      }
    });

    it('announces changes between replicas over the cluster bus, and calls listeners again when the subscriber reconnects or moves', async () => {
      const prefix = `t${sequence++}:`;
      const [writer, reader] = [await newStore(prefix), await newStore(prefix)];
      const raw = new Cluster(cluster!.nodes);
      let paused: number | undefined;
      try {
        const handle = providedRecord().handle;
        let heard = 0;
        reader.events.subscribe(handle, () => heard++);
        await waitFor(async () => heard === 1, 'the first subscription', 5000);
        // Each through whichever node the writer's client picks; the bus carries it to the reader's.
        for (let i = 1; i <= 3; i++) {
          await writer.events.publish(handle);
          await waitFor(async () => heard === 1 + i, `announcement ${i}`, 5000);
        }

        const masters = raw.nodes('master');
        /** The masters (as indexes into `masters`) that list a subscriber connection of the store's. */
        const subscribedOn = async () => {
          const lists = await Promise.all(masters.map((node) => node.call('CLIENT', 'LIST', 'TYPE', 'pubsub') as Promise<string>));
          return lists.flatMap((list, index) => (list.includes('name=taskgate-events') ? [index] : []));
        };
        assert.equal((await subscribedOn()).length, 1, 'the subscriber is on one master');
        await Promise.all(masters.map((node) => node.client('KILL', 'TYPE', 'pubsub')));
        await waitFor(async () => heard === 5, 'the listener to be called after its subscriber reconnected', 5000);

        // Its node stops answering: the subscriber gives it up for another node (the heartbeat
        // finds it), and the listener is called once it is subscribed there. The node resumes
        // before the cluster would mark it failed (cluster-node-timeout, 15 s).
        const node = (await subscribedOn())[0]!;
        const port = Number(masters[node]!.options.port);
        paused = cluster!.servers.findIndex((server) => server.port === port);
        cluster!.servers[paused]!.pause();
        await waitFor(async () => heard === 6, 'the listener to be called after its subscriber moved', 12_000);
        cluster!.servers[paused]!.resume();
        paused = undefined;
        // (The resumed node may still list the connection it lost until it reads its end.)
        const on = await subscribedOn();
        assert.ok(on.some((index) => index !== node), `subscribed on another node than ${port}`);
      } finally {
        if (paused !== undefined) cluster!.servers[paused]!.resume();
        raw.disconnect();
        await Promise.all([writer.close(), reader.close()]);
      }
    });

    it('sends WAIT to the master that holds the new record', async () => {
      // The test cluster has no replicas: WAIT 1 answers 0 after its timeout, from the right
      // node (a keyless WAIT sent elsewhere would acknowledge some other connection's writes).
      const warnings: string[] = [];
      const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (warnings.push(String(chunk)), done()) }));
      const config = redisConfig({ mode: 'cluster', nodes: cluster!.nodes.map((n) => `${n.host}:${n.port}`), keyPrefix: `t${sequence++}:`, waitReplicas: { replicas: 1, timeout: '20ms' } });
      const store = new RedisStore(config, { logger });
      try {
        await store.whenReady(5000);
        for (let i = 0; i < 3; i++) assert.equal(await store.createTask(taskRecord(), 10), 'created');
        assert.equal(warnings.length, 3);
      } finally {
        await store.close();
      }
    });

    it('spreads tasks and owners over the masters, each task\'s keys in one slot', async () => {
      const store = await newStore();
      const raw = new Cluster(cluster!.nodes);
      try {
        const records = Array.from({ length: 12 }, (_, i) => taskRecord({ owner: `owner-${i}` }));
        for (const record of records) assert.equal(await store.createTask(record, 10), 'created');
        const slots = new Set<number>();
        for (const record of records) {
          const keys = store.keys.task(record.handle);
          const [recordSlot, pollSlot, snapshotSlot] = await Promise.all([keys.record, keys.poll, keys.snapshot].map((key) => raw.cluster('KEYSLOT', key)));
          assert.equal(pollSlot, recordSlot);
          assert.equal(snapshotSlot, recordSlot);
          slots.add(recordSlot!);
        }
        assert.ok(slots.size > 1, 'handles hash to different slots');
        const masters = raw.nodes('master');
        const holding = await Promise.all(masters.map(async (node) => (await node.keys(`${store.keys.prefix}task:*`)).length));
        assert.ok(holding.filter((count) => count > 0).length > 1, `task records on more than one master: ${holding.join(', ')}`);
      } finally {
        raw.disconnect();
        await store.close();
      }
    });
  });
}
