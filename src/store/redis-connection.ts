/**
 * The ioredis client of the Redis store, configured to fail closed: while Redis is away a
 * command is refused at once instead of queueing (nothing piles up in memory), a command
 * Redis does not answer within commandTimeout is rejected, and a connection that stops
 * answering is dropped and reopened (socketTimeout). Reconnection is retried forever, so
 * the gateway recovers by itself when Redis returns.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import pino, { type Logger } from 'pino';
import type { RedisStoreConfig } from '../config/sections/store.js';

export type RedisClient = Redis | Cluster;

const MAX_RECONNECT_DELAY_MS = 1000;

/** Quick first retries (a restart or failover is usually brief), then one a second. */
function reconnectDelay(attempt: number): number {
  return Math.min(50 * 2 ** Math.min(attempt, 5), MAX_RECONNECT_DELAY_MS);
}

function tlsOptions(config: RedisStoreConfig): ConnectionOptions | undefined {
  const { tls } = config;
  if (tls === true || (tls === undefined && config.url?.startsWith('rediss:'))) return {};
  if (tls === false || tls === undefined) return undefined;
  return {
    ...(tls.ca === undefined ? {} : { ca: readFileSync(tls.ca, 'utf8') }),
    ...(tls.servername === undefined ? {} : { servername: tls.servername }),
  };
}

function connectionOptions(config: RedisStoreConfig, connectionName = 'taskgate'): RedisOptions {
  const tls = tlsOptions(config);
  return {
    username: config.username,
    password: config.password,
    ...(tls ? { tls } : {}),
    connectTimeout: config.connectTimeout,
    commandTimeout: config.commandTimeout,
    socketTimeout: config.commandTimeout,
    // A command the server may already have run (a poll decision, a creation) must not be
    // replayed after a reconnect: the caller was already told it failed.
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    retryStrategy: reconnectDelay,
    connectionName,
  };
}

/**
 * The client, connecting. It is created lazily (below) and connected only once every hook on
 * its connector is in place: the first connection is guarded too, and in sentinel mode the
 * first connection to a Sentinel (made during connect()) already has its listeners.
 */
export function createRedisClient(config: RedisStoreConfig, logger: Logger = pino({ level: 'silent' }), connectionName?: string): RedisClient {
  const client = newClient(config, connectionName);
  if (client instanceof Cluster) client.on('+node', guardConnections);
  else guardConnections(client);
  if (config.mode === 'sentinel') reportSentinelErrors(client, logger);
  // Failures are reported as 'error' events (logConnectionState); the promise adds nothing.
  client.connect().catch(() => undefined);
  return client;
}

function newClient(config: RedisStoreConfig, connectionName?: string): RedisClient {
  const options = connectionOptions(config, connectionName);
  switch (config.mode) {
    case 'cluster':
      return new Cluster(config.nodes ?? [], {
        lazyConnect: true,
        enableOfflineQueue: false,
        scaleReads: 'master',
        clusterRetryStrategy: reconnectDelay,
        slotsRefreshTimeout: config.connectTimeout,
        retryDelayOnFailover: 50,
        retryDelayOnClusterDown: 50,
        retryDelayOnTryAgain: 50,
        // Node connections open lazily and must queue their first command while they do;
        // commandTimeout still bounds how long one waits there.
        redisOptions: options,
      });
    case 'sentinel': {
      const client = new Redis({
        ...options,
        lazyConnect: true,
        enableOfflineQueue: false,
        sentinels: config.sentinels ?? [],
        name: config.name,
        sentinelCommandTimeout: config.commandTimeout,
        enableTLSForSentinelMode: options.tls !== undefined,
        // The Sentinels themselves are reached over TLS too (store.tls says so), with the same
        // CA; ioredis takes that separately. The servername names the data nodes, not them.
        ...(options.tls ? { sentinelTLS: { ...options.tls, servername: undefined } } : {}),
        // Follow a failover when Sentinel announces it (+switch-master), not when the old
        // master drops the connection: after SENTINEL FAILOVER, or a partition that heals, the
        // old master stays up and writable for some seconds before Sentinel demotes it, and
        // what it takes meanwhile is discarded by the demotion.
        failoverDetector: true,
      });
      closeFailoverDetectorOnEnd(client);
      return client;
    }
    case 'standalone':
      return new Redis(config.url ?? '', { ...options, lazyConnect: true, enableOfflineQueue: false });
    default: {
      const unreachable: never = config.mode;
      throw new Error(`unknown redis mode ${String(unreachable)}`);
    }
  }
}

/** Reconnection attempts to one Cluster node before a subscriber gives it up for another. */
const NODE_ATTEMPTS = 3;

/**
 * A connection for SUBSCRIBE (redis-task-events.ts), named `connectionName`, failing closed and
 * guarded like the store's. Standalone and Sentinel: a client like the store's (under
 * Sentinel it follows the master). Cluster: a plain connection to `node`, one of the
 * cluster's: a PUBLISH reaches every node over the cluster bus, so any node hears every
 * announcement. ioredis' own Cluster subscriber was not used: its connection takes none of
 * these options, has no guard against a second socket error, and says nothing when it
 * subscribes again. A node connection ends ('end') after NODE_ATTEMPTS failed reconnections,
 * for the caller to try another node.
 */
export function createSubscriberClient(config: RedisStoreConfig, logger: Logger, connectionName: string, node?: { host: string; port: number }): Redis {
  if (config.mode !== 'cluster') return createRedisClient(config, logger, connectionName) as Redis;
  const client = new Redis({
    ...connectionOptions(config, connectionName),
    host: node?.host,
    port: node?.port,
    lazyConnect: true,
    enableOfflineQueue: false,
    retryStrategy: (attempt) => (attempt > NODE_ATTEMPTS ? null : reconnectDelay(attempt)),
  });
  guardConnections(client);
  client.connect().catch(() => undefined);
  return client;
}

/**
 * ioredis listens for a connection's 'error' with once() (redis/ioredis#961, never merged).
 * A socket that emits a second 'error' then finds no listener, and Node turns that into an
 * uncaught exception, which would end the gateway. A TLS connection can do this: a CI run of
 * redis-tls.test.ts died of "tlsv1 alert decode error" after a refused handshake. Every
 * connection the client's connector opens (each Cluster node's too) gets a listener of its
 * own, for its whole life. ioredis still handles the first error as before: it reconnects and
 * emits the client's 'error' event, which logConnectionState reports. Like the two functions
 * below, this reaches into ioredis' connector. Should that move,
 * test/unit/store/redis-fail-closed.test.ts fails.
 */
function guardConnections(redis: Redis): void {
  type Connect = (...args: unknown[]) => Promise<NodeJS.EventEmitter>;
  const connector = (redis as unknown as { connector?: { connect?: Connect } }).connector;
  const connect = connector?.connect;
  if (!connector || typeof connect !== 'function') return;
  connector.connect = (...args) =>
    connect.apply(connector, args).then((stream) => {
      stream.on('error', () => undefined);
      return stream;
    });
}

/**
 * ioredis 5.9 closes the failover detector's Sentinel subscriptions on disconnect() but not
 * after quit() (redis/ioredis#1362): left open, they would keep the process from exiting
 * after a graceful shutdown. Closed here once the client has ended. The detector is private
 * to ioredis; should it move, test/unit/store/redis-sentinel.test.ts fails on the open sockets.
 */
function closeFailoverDetectorOnEnd(client: Redis): void {
  client.once('end', () => {
    const { connector } = client as unknown as { connector?: { failoverDetector?: { cleanup(): void } | null } };
    connector?.failoverDetector?.cleanup();
  });
}

/**
 * ioredis gives the failover detector's connections to the Sentinels no 'error' listener, so
 * a Sentinel that is down or restarting was printed to the console as "[ioredis] Unhandled
 * error event", outside the gateway's log (redis/ioredis#1829). Every connection the
 * connector opens to a Sentinel now gets one: a warning once per Sentinel until it answers
 * again. Those connections are also guarded against a second socket error (guardConnections):
 * they are made lazy, so that the guard is in place before they connect (ioredis connects a
 * lazy client on its first command). Like closeFailoverDetectorOnEnd this reaches into
 * ioredis' connector; should it move, test/unit/store/redis-sentinel.test.ts fails (it
 * listens for both the warning and the console line).
 */
function reportSentinelErrors(client: RedisClient, logger: Logger): void {
  type Connect = (endpoint: { host?: string; port?: number }, options?: Record<string, unknown>) => Redis;
  const connector = (client as unknown as { connector?: { connectToSentinel?: Connect } }).connector;
  const connect = connector?.connectToSentinel;
  if (!connector || typeof connect !== 'function') return;
  connector.connectToSentinel = (endpoint, options) => {
    const sentinel = connect.call(connector, endpoint, { lazyConnect: true, ...options });
    guardConnections(sentinel);
    const address = `${endpoint.host ?? 'localhost'}:${endpoint.port ?? 26379}`;
    let reported = false;
    sentinel.on('error', (error: Error) => {
      if (reported) return;
      reported = true;
      logger.warn({ store: 'redis', mode: 'sentinel', sentinel: address, err: error }, 'a Sentinel is unreachable; the store uses the others it was given');
    });
    sentinel.on('ready', () => {
      reported = false;
    });
    return sentinel;
  };
}

/**
 * Logs an outage once when it starts and once when it ends: ioredis reports an error on
 * every reconnect attempt, which while Redis is down would flood the log.
 */
export function logConnectionState(client: RedisClient, logger: Logger, mode: RedisStoreConfig['mode']): void {
  let up = false;
  let reported = false;
  client.on('ready', () => {
    logger.info({ store: 'redis', mode }, reported ? 'store reachable again' : 'store connected');
    up = true;
    reported = false;
  });
  client.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    logger.warn({ store: 'redis', mode, err: error }, 'store unreachable; task operations fail with 503 until it returns');
  });
  client.on('close', () => {
    if (!up || reported) return;
    up = false;
    reported = true;
    logger.warn({ store: 'redis', mode }, 'store connection lost; task operations fail with 503 until it returns');
  });
}
