/**
 * Real Redis for the Redis store tests: the shared server at 127.0.0.1:6379, and
 * redis-server processes the tests start on free loopback ports and stop by PID.
 * Not a test file itself.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { Redis } from 'ioredis';
import { redisStoreSchema, type RedisStoreConfig } from '../../src/config/sections/store.js';
import { describeError, toWireError } from '../../src/errors.js';
import { RedisStore, type RedisStoreDeps } from '../../src/store/redis-store.js';
import { StoreUnavailableError } from '../../src/store/store-unavailable.js';
import { waitFor } from './wait.js';

export const SHARED_REDIS = { host: '127.0.0.1', port: 6379 };
export const SNAPSHOT_KEY_1 = { id: 'k1', key: Buffer.alloc(32, 1).toString('base64') };
export const SNAPSHOT_KEY_2 = { id: 'k2', key: Buffer.alloc(32, 2).toString('base64') };

/**
 * A key space of its own on the shared Redis, for one test file or stack: a unique key prefix,
 * a policy's `store:` section under it, and the removal of every key under it (never FLUSHALL:
 * the server is shared with other runs).
 */
export interface SharedRedisSpace {
  readonly url: string;
  readonly keyPrefix: string;
  /** `store:` for a policy on the shared Redis under keyPrefix (snapshot key 1); `extra` adds to it. */
  storePolicy(extra?: Record<string, unknown>): Record<string, unknown>;
  /** Deletes every key under keyPrefix. */
  removeKeys(): Promise<void>;
}

export function sharedRedisSpace(label = 'taskgate-test'): SharedRedisSpace {
  const url = `redis://${SHARED_REDIS.host}:${SHARED_REDIS.port}`;
  const keyPrefix = `${label}:${process.pid}-${randomBytes(4).toString('hex')}:`;
  return {
    url,
    keyPrefix,
    storePolicy: (extra = {}) => ({ type: 'redis', url, keyPrefix, snapshotKeys: [SNAPSHOT_KEY_1], ...extra }),
    async removeKeys() {
      const redis = new Redis({ host: SHARED_REDIS.host, port: SHARED_REDIS.port, lazyConnect: true });
      try {
        const keys = await redis.keys(`${keyPrefix}*`);
        if (keys.length > 0) await redis.del(...keys);
      } finally {
        await redis.quit();
      }
    },
  };
}

/**
 * RedisStores on the shared Redis, each under a prefix of its own inside one space (a test
 * file's); close() closes every one and removes the space's keys.
 */
export class SharedRedisStores {
  readonly space: SharedRedisSpace;
  private sequence = 0;
  private readonly opened: RedisStore[] = [];

  constructor(label?: string) {
    this.space = sharedRedisSpace(label);
  }

  /** A fresh prefix inside the space: for stores meant to share their keys, pass it to each. */
  nextPrefix(): string {
    return `${this.space.keyPrefix}${this.sequence++}:`;
  }

  /** A ready store on its own prefix, unless `overrides` names one. */
  async open(overrides: Record<string, unknown> = {}, deps: RedisStoreDeps = {}): Promise<RedisStore> {
    const store = new RedisStore(redisConfig({ url: this.space.url, keyPrefix: this.nextPrefix(), ...overrides }), deps);
    this.opened.push(store);
    await store.whenReady();
    return store;
  }

  async close(): Promise<void> {
    await Promise.all(this.opened.map((store) => store.close()));
    await this.space.removeKeys();
  }
}

/** A store policy as the config schema makes it, defaults included. */
export function redisConfig(overrides: Record<string, unknown>): RedisStoreConfig {
  return redisStoreSchema.parse({ type: 'redis', snapshotKeys: [SNAPSHOT_KEY_1], ...overrides });
}

/**
 * Where Redis is missing the evidence cannot run: on CI that is a failure (the evidence must
 * run there), elsewhere a skip that says so loudly.
 */
export function reportMissingRedis(what: string, remedy: string): void {
  const message = `${what} is not available: the Redis store tests did not run`;
  if (process.env.CI === 'true') {
    it(message, () => assert.fail(`${message} (CI=true: Redis is required)`));
    return;
  }
  console.warn(`\n*** SKIPPED: ${message}.\n*** ${remedy}\n`);
  it(message, { skip: message }, () => undefined);
}

export const START_SHARED_REDIS = 'Start it with: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no';
export const INSTALL_REDIS = 'Install Redis (redis-server and redis-cli on the PATH), e.g. apt-get install redis-server.';

export function redisServerInstalled(): boolean {
  return ['redis-server', 'redis-cli'].every((command) => spawnSync(command, ['--version'], { stdio: 'ignore' }).status === 0);
}

/** For the tests that start their own redis-server: whether they can, reporting it (as above) when not. */
export function redisServerOrReport(): boolean {
  const installed = redisServerInstalled();
  if (!installed) reportMissingRedis('redis-server', INSTALL_REDIS);
  return installed;
}

/** Whether something at `port` answers PING like Redis, within `timeoutMs`. */
export async function answersPing(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free port whose Cluster bus port (port + 10000) is free as well, so it stays below the
 * ephemeral range the OS hands out for port 0.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if ((await portFree(port)) && (await portFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair found');
}

/**
 * The redis-servers still running. Should the test process exit without stopping one (a
 * crash, a cancelled run), it is killed on the way out rather than left behind.
 */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * One redis-server process on loopback, without persistence. It works in a directory of its
 * own, removed on stop: a replica writes the RDB it receives even with `--save ""`.
 */
export class RedisServerProcess {
  readonly port: number;
  private readonly child: ChildProcess;
  private readonly dir: string;

  private constructor(port: number, child: ChildProcess, dir: string) {
    this.port = port;
    this.child = child;
    this.dir = dir;
  }

  static async start(port?: number, extraArgs: string[] = []): Promise<RedisServerProcess> {
    const chosen = port ?? (await freePort());
    const dir = await mkdtemp(join(tmpdir(), 'taskgate-redis-'));
    const args = ['--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', dir, ...extraArgs];
    return RedisServerProcess.spawnIn(chosen, dir, args);
  }

  /**
   * A Sentinel monitoring one master (quorum 1) under `name`. Sentinel rewrites its config
   * file as it learns, so the file is written into the process's own directory. `extra`
   * lines go into that file too (TLS settings, say).
   */
  static async startSentinel(name: string, master: { host: string; port: number }, timing: { downAfterMs: number; failoverTimeoutMs: number }, extra: string[] = []): Promise<RedisServerProcess> {
    const port = await freePort();
    const dir = await mkdtemp(join(tmpdir(), 'taskgate-sentinel-'));
    const config = join(dir, 'sentinel.conf');
    await writeFile(
      config,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        'daemonize no',
        `dir ${dir}`,
        `sentinel monitor ${name} ${master.host} ${master.port} 1`,
        `sentinel down-after-milliseconds ${name} ${timing.downAfterMs}`,
        `sentinel failover-timeout ${name} ${timing.failoverTimeoutMs}`,
        ...extra,
        '',
      ].join('\n'),
    );
    return RedisServerProcess.spawnIn(port, dir, [config, '--sentinel']);
  }

  private static async spawnIn(port: number, dir: string, args: string[]): Promise<RedisServerProcess> {
    const child = spawn('redis-server', args, { stdio: 'ignore', cwd: dir });
    running.add(child);
    child.once('exit', () => running.delete(child));
    const server = new RedisServerProcess(port, child, dir);
    try {
      await waitFor(() => answersPing(port), `redis-server on port ${port}`);
    } catch (error) {
      await server.stop();
      throw error;
    }
    return server;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** SIGSTOP: the port still accepts connections but nothing answers, as with a stalled Redis. */
  pause(): void {
    process.kill(this.pid, 'SIGSTOP');
  }

  resume(): void {
    process.kill(this.pid, 'SIGCONT');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = once(this.child, 'exit');
      process.kill(this.pid, 'SIGKILL');
      await exited;
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}

export interface RedisClusterProcesses {
  readonly nodes: { host: string; port: number }[];
  /** The masters' processes, in the order of `nodes`. */
  readonly servers: readonly RedisServerProcess[];
  stop(): Promise<void>;
}

/** Three masters, no replicas, formed with redis-cli --cluster create. */
export async function startRedisCluster(size = 3): Promise<RedisClusterProcesses> {
  const dir = await mkdtemp(join(tmpdir(), 'taskgate-redis-cluster-'));
  const servers: RedisServerProcess[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < size; i++) {
      const port = await freePort();
      servers.push(await RedisServerProcess.start(port, ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`)]));
    }
    const addresses = servers.map((server) => `127.0.0.1:${server.port}`);
    const create = spawn('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'], { stdio: 'ignore' });
    const [code] = (await once(create, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`redis-cli --cluster create exited with ${code}`);
    for (const server of servers) {
      await waitFor(async () => clusterStateOk(server.port), `cluster_state:ok on port ${server.port}`);
    }
    return { nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })), servers, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function clusterStateOk(port: number): Promise<boolean> {
  const info = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8' });
  return info.stdout.includes('cluster_state:ok');
}

export interface RedisSentinelProcesses {
  readonly name: string;
  readonly master: RedisServerProcess;
  readonly replica: RedisServerProcess;
  readonly sentinel: RedisServerProcess;
  /** The sentinels as store.sentinels takes them. */
  readonly sentinels: string[];
  stop(): Promise<void>;
}

/**
 * A master, one replica of it, and one Sentinel (quorum 1) watching them under `name`;
 * resolves once the replica acknowledges writes and the Sentinel has discovered it, so that
 * a failover has somewhere to go.
 */
export async function startRedisSentinel(name: string, timing: { downAfterMs: number; failoverTimeoutMs: number }): Promise<RedisSentinelProcesses> {
  const servers: RedisServerProcess[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };
  try {
    // Without the delay a diskless initial sync waits 5 s for more replicas to join it.
    const master = await RedisServerProcess.start(undefined, ['--repl-diskless-sync-delay', '0']);
    servers.push(master);
    const replica = await RedisServerProcess.start(undefined, ['--replicaof', '127.0.0.1', String(master.port)]);
    servers.push(replica);
    await waitFor(async () => replicaAcknowledges(master.port), `the replica on port ${replica.port} to acknowledge writes`);
    const sentinel = await RedisServerProcess.startSentinel(name, { host: '127.0.0.1', port: master.port }, timing);
    servers.push(sentinel);
    await waitFor(async () => sentinelSeesReplica(sentinel.port, name, replica.port), `the sentinel to discover the replica on port ${replica.port}`);
    return { name, master, replica, sentinel, sentinels: [`127.0.0.1:${sentinel.port}`], stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * A write on the master reaches a replica (WAIT). The master lists a replica as online before
 * it has loaded the initial sync; only then does it acknowledge writes.
 */
export function replicaAcknowledges(masterPort: number): boolean {
  const input = 'SET taskgate-sync-probe 1\nWAIT 1 100\nDEL taskgate-sync-probe\n';
  const replies = spawnSync('redis-cli', ['-p', String(masterPort)], { input, encoding: 'utf8' }).stdout.trim().split('\n');
  return replies[1] === '1';
}

/** The Sentinel lists the replica as a replica, connected and not down. */
export function sentinelSeesReplica(sentinelPort: number, name: string, replicaPort: number): boolean {
  const lines = spawnSync('redis-cli', ['-p', String(sentinelPort), 'sentinel', 'replicas', name], { encoding: 'utf8' }).stdout.trim().split('\n');
  const fields = new Map<string, string>();
  for (let i = 0; i + 1 < lines.length; i += 2) fields.set(lines[i]!, lines[i + 1]!);
  return fields.get('port') === String(replicaPort) && fields.get('flags') === 'slave' && fields.get('role-reported') === 'slave';
}

/** A plain ioredis client on the loopback `port` for the length of `use` (no retries). */
export async function withClient<T>(port: number, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 1000 });
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}

/** The port a Sentinel names as the master of `name`; undefined when it names none. */
export async function masterPortOf(sentinel: Redis, name: string): Promise<number | undefined> {
  const reply = (await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string] | null;
  return reply ? Number(reply[1]) : undefined;
}

/** Waits until the Sentinel on `sentinelPort` names `port` the master of `name`; returns when it did. */
export async function untilMasterIs(sentinelPort: number, name: string, port: number): Promise<number> {
  await withClient(sentinelPort, (sentinel) => waitFor(async () => (await masterPortOf(sentinel, name)) === port, `Sentinel to name port ${port} the master`, 15_000));
  return Date.now();
}

/** An assert.rejects predicate: the store failed closed with the catalogue's error. */
export function isStoreUnavailable(error: unknown): boolean {
  assert.ok(error instanceof StoreUnavailableError, `expected StoreUnavailableError, got ${String(error)}`);
  // A local error of the store, answered at the edge as the catalogue's 503.
  const answer = toWireError(error);
  assert.equal(answer?.code, 'TG_ERR_STORE_UNAVAILABLE');
  assert.equal(answer?.statusIn('legacy'), describeError('TG_ERR_STORE_UNAVAILABLE').httpStatus);
  return true;
}
