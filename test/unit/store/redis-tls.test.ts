/**
 * The Redis store over TLS, against a redis-server the test starts with a certificate signed
 * by a CA made for this run (openssl): the store contract over `rediss://` trusting that CA
 * (`store.tls.ca`), the server name checked (and overridden with `servername`), and a server
 * whose certificate is not trusted refused: the store fails closed rather than talk to it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RedisStore } from '../../../src/store/redis-store.js';
import { StoreUnavailableError } from '../../../src/store/store-unavailable.js';
import { defineProvidedContract } from './provided-contract.js';
import { defineStoreContract } from './store-contract.js';
import { freePort, INSTALL_REDIS, redisConfig, redisServerInstalled, RedisServerProcess, replicaAcknowledges, reportMissingRedis, sentinelSeesReplica, untilMasterIs, withClient } from '../../support/redis-servers.js';
import { waitFor } from '../../support/wait.js';
import { taskRecord } from '../../support/task-records.js';

/** A refused handshake is retried until connectTimeout; the tests wait this long for "never ready". */
const REFUSED_WITHIN_MS = 1500;

function openssl(dir: string, args: string[]): void {
  const run = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${run.stderr}`);
}

/** A CA, a server certificate it signed for localhost and 127.0.0.1, and a second, unrelated CA. */
async function makeCertificates(dir: string): Promise<{ ca: string; otherCa: string; cert: string; key: string }> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=taskgate test CA']);
  openssl(dir, ['req', '-x509', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-days', '1', '-subj', '/CN=some other CA']);
  openssl(dir, ['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost']);
  await writeFile(join(dir, 'san.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'san.cnf']);
  return { ca: join(dir, 'ca.crt'), otherCa: join(dir, 'other-ca.crt'), cert: join(dir, 'server.crt'), key: join(dir, 'server.key') };
}

const opensslInstalled = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

if (!redisServerInstalled() || !opensslInstalled) {
  reportMissingRedis('redis-server and openssl (to start a Redis that speaks TLS)', `${INSTALL_REDIS} And openssl (apt-get install openssl).`);
} else {
  const dir = await mkdtemp(join(tmpdir(), 'taskgate-redis-tls-'));
  const certs = await makeCertificates(dir);
  const tlsPort = await freePort();
  // The plain port is only for the helper's readiness check; the stores below use TLS.
  const server = await RedisServerProcess.start(undefined, [
    '--tls-port', String(tlsPort),
    '--tls-cert-file', certs.cert,
    '--tls-key-file', certs.key,
    '--tls-ca-cert-file', certs.ca,
    '--tls-auth-clients', 'no',
  ]);
  const url = `rediss://127.0.0.1:${tlsPort}`;
  const open: RedisStore[] = [];
  let sequence = 0;

  const newStore = (tls: Record<string, unknown>, overrides: Record<string, unknown> = {}): RedisStore => {
    const store = new RedisStore(redisConfig({ url, tls, keyPrefix: `tls${sequence++}:`, connectTimeout: '500ms', ...overrides }));
    open.push(store);
    return store;
  };

  after(async () => {
    await Promise.all(open.map((store) => store.close()));
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const overTls = {
    create: async () => {
      const store = newStore({ ca: certs.ca });
      await store.whenReady(5000);
      return store;
    },
  };
  defineStoreContract('redis over TLS (rediss://, tls.ca)', overTls);
  // Over TLS too, as task events open a connection of their own.
  defineProvidedContract('redis over TLS (rediss://, tls.ca)', overTls);

  describe('Redis store over TLS', () => {
    it('checks the server name, which servername can override', async () => {
      const named = newStore({ ca: certs.ca, servername: 'localhost' });
      await named.whenReady(5000);
      assert.equal(await named.isReady(), true);

      const wrongName = newStore({ ca: certs.ca, servername: 'redis.other.example' });
      await assert.rejects(wrongName.whenReady(REFUSED_WITHIN_MS), StoreUnavailableError, 'a certificate for another name is refused');
      await assert.rejects(wrongName.getTask('tg_nothing'), StoreUnavailableError, 'and the store fails closed');
    });

    it('refuses a server whose certificate its CA did not sign, and fails closed', async () => {
      const untrusting = newStore({ ca: certs.otherCa });
      await assert.rejects(untrusting.whenReady(REFUSED_WITHIN_MS), StoreUnavailableError);
      assert.equal(await untrusting.isReady(), false);
      await assert.rejects(untrusting.getTask('tg_nothing'), StoreUnavailableError);
    });

    it('refuses it too with the system trust store (tls: true)', async () => {
      const systemTrust = newStore(true as never);
      await assert.rejects(systemTrust.whenReady(REFUSED_WITHIN_MS), StoreUnavailableError);
    });

    it('works behind a Sentinel that speaks TLS, to a master that speaks TLS', async () => {
      // The Sentinel reaches the master over TLS (tls-replication) and is itself reached over
      // TLS; it names the master by its TLS port, which the store then connects to.
      const tlsFiles = [`tls-cert-file ${certs.cert}`, `tls-key-file ${certs.key}`, `tls-ca-cert-file ${certs.ca}`, 'tls-auth-clients no', 'tls-replication yes'];
      const sentinelTlsPort = await freePort();
      const sentinel = await RedisServerProcess.startSentinel('tlsmaster', { host: '127.0.0.1', port: tlsPort }, { downAfterMs: 5000, failoverTimeoutMs: 10_000 }, [`tls-port ${sentinelTlsPort}`, ...tlsFiles]);
      // Only the Sentinel's TLS port is named, and it names the master's TLS port.
      const config = redisConfig({ mode: 'sentinel', sentinels: [`127.0.0.1:${sentinelTlsPort}`], name: 'tlsmaster', tls: { ca: certs.ca }, keyPrefix: `tls${sequence++}:` });
      const store = new RedisStore(config);
      try {
        await store.whenReady(5000);
        const record = taskRecord();
        assert.equal(await store.createTask(record, 10), 'created');
        assert.deepEqual(await store.getTask(record.handle), record);
      } finally {
        // The store first: its failover detector would otherwise see the Sentinel go away.
        await store.close();
        await sentinel.stop();
      }
    });

    it('follows a failover from a master to a replica, all over TLS, with what it wrote before', async (t) => {
      // A master and a replica of it, each with a TLS port; the replica replicates over TLS and
      // so announces its TLS port, which is what the Sentinel names once it has promoted it.
      const tls = ['--tls-cert-file', certs.cert, '--tls-key-file', certs.key, '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no'];
      const masterTls = await freePort();
      const replicaTls = await freePort();
      const master = await RedisServerProcess.start(undefined, ['--tls-port', String(masterTls), ...tls, '--repl-diskless-sync-delay', '0']);
      const replica = await RedisServerProcess.start(undefined, ['--tls-port', String(replicaTls), ...tls, '--tls-replication', 'yes', '--replicaof', '127.0.0.1', String(masterTls)]);
      const name = 'tlsfailover';
      const sentinelTls = await freePort();
      let sentinel: RedisServerProcess | undefined;
      let store: RedisStore | undefined;
      try {
        await waitFor(async () => replicaAcknowledges(master.port), 'the replica to acknowledge writes over TLS');
        const tlsLines = [`tls-port ${sentinelTls}`, `tls-cert-file ${certs.cert}`, `tls-key-file ${certs.key}`, `tls-ca-cert-file ${certs.ca}`, 'tls-auth-clients no', 'tls-replication yes'];
        sentinel = await RedisServerProcess.startSentinel(name, { host: '127.0.0.1', port: masterTls }, { downAfterMs: 1000, failoverTimeoutMs: 5000 }, tlsLines);
        const sentinelPort = sentinel.port;
        await waitFor(async () => sentinelSeesReplica(sentinelPort, name, replicaTls), 'the Sentinel to discover the replica by its TLS port');

        store = new RedisStore(
          redisConfig({
            mode: 'sentinel',
            sentinels: [`127.0.0.1:${sentinelTls}`],
            name,
            tls: { ca: certs.ca },
            keyPrefix: `tls${sequence++}:`,
            commandTimeout: '300ms',
            connectTimeout: '500ms',
            waitReplicas: { replicas: 1, timeout: '200ms' },
          }),
        );
        await store.whenReady(5000);
        const written = taskRecord();
        assert.equal(await store.createTask(written, 10), 'created');

        await withClient(sentinelPort, (client) => client.call('SENTINEL', 'FAILOVER', name));
        const switched = await untilMasterIs(sentinelPort, name, replicaTls);
        let probes = 0;
        const follower = store;
        // Checked on the promoted server's plain port: the write landed there, over TLS.
        await withClient(replica.port, (promoted) =>
          waitFor(async () => {
            const probe = taskRecord({ owner: `probe-${probes++}` });
            if ((await follower.createTask(probe, 10).catch(() => 'failed')) !== 'created') return false;
            return (await promoted.exists(follower.keys.task(probe.handle).record)) === 1;
          }, 'a task created through the store to land on the promoted replica', 5000),
        );
        t.diagnostic(`over TLS, writes reached the promoted replica ${Date.now() - switched}ms after Sentinel named it`);
        assert.deepEqual(await store.getTask(written.handle), written, 'the task written before the failover survived it');
      } finally {
        await store?.close();
        await sentinel?.stop();
        await replica.stop();
        await master.stop();
      }
    });
  });
}
