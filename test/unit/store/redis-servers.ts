/**
 * Real Redis for the Redis store tests: the shared server at 127.0.0.1:6379, and
 * redis-server processes the tests start on free loopback ports and stop by PID.
 * Not a test file itself.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { redisStoreSchema, type RedisStoreConfig } from '../../../src/config/sections/store.js';

export const SHARED_REDIS = { host: '127.0.0.1', port: 6379 };
export const SNAPSHOT_KEY_1 = { id: 'k1', key: Buffer.alloc(32, 1).toString('base64') };
export const SNAPSHOT_KEY_2 = { id: 'k2', key: Buffer.alloc(32, 2).toString('base64') };

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

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

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
    const child = spawn('redis-server', args, { stdio: 'ignore', cwd: dir });
    const server = new RedisServerProcess(chosen, child, dir);
    try {
      await until(() => answersPing(chosen), `redis-server on port ${chosen}`);
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
      await until(async () => clusterStateOk(server.port), `cluster_state:ok on port ${server.port}`);
    }
    return { nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function clusterStateOk(port: number): Promise<boolean> {
  const info = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8' });
  return info.stdout.includes('cluster_state:ok');
}
