/**
 * TaskEvents (provided-store.ts) across replicas, over Redis Pub/Sub: one channel under the key
 * prefix (`<prefix>task-events`), the message a task's handle. Every replica that has a
 * listener holds one subscriber connection of its own (opened on the first subscribe) and
 * calls its local listeners for the handles it hears; announcements go out on the store's
 * command connection.
 *
 * Delivery is at most once: Pub/Sub keeps nothing for a subscriber that is away. So whenever
 * the channel is subscribed anew (the first time, and after every reconnection, a Redis
 * restart or failover, a move to another Cluster node), every local listener is called once,
 * to read the task again. A subscriber connection that died without a word (a silent network)
 * is found by a PING every HEARTBEAT_MS, which the connection's command timeout turns into a
 * reconnection. docs/operations.md, "Task change announcements".
 */
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisStoreConfig } from '../config/sections/store.js';
import type { TaskEvents } from './provided-store.js';
import { createSubscriberClient, type RedisClient } from './redis-connection.js';

const HEARTBEAT_MS = 5000;
/** Before a Cluster subscriber tries the next node, once it gave one up. */
const NEXT_NODE_DELAY_MS = 1000;

type Listener = () => void;

export class RedisTaskEvents implements TaskEvents {
  private readonly config: RedisStoreConfig;
  private readonly publisher: RedisClient;
  private readonly channel: string;
  private readonly logger: Logger;
  private readonly listeners = new Map<string, Set<Listener>>();
  private subscriber: Redis | undefined;
  private closed = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private nextNode: NodeJS.Timeout | undefined;
  /** Cluster: which node the next subscriber connection goes to; replicas start at random ones. */
  private nodeTurn = Math.floor(Math.random() * 1024);
  private subscriberDown = false;
  private publishFailing = false;

  constructor(config: RedisStoreConfig, publisher: RedisClient, channel: string, logger: Logger) {
    this.config = config;
    this.publisher = publisher;
    this.channel = channel;
    this.logger = logger;
  }

  /**
   * Best effort, and never rejects: the change it announces is already in the store, so a
   * caller whose write succeeded must not be told otherwise. A failure is logged (once until
   * a publish succeeds again); listeners that miss it read the task again when their
   * subscriber reconnects, or at their next change or timer.
   */
  async publish(handle: string): Promise<void> {
    try {
      await this.publisher.publish(this.channel, handle);
      this.publishFailing = false;
    } catch (error) {
      if (!this.publishFailing) this.logger.warn({ store: 'redis', err: error }, 'a task change could not be announced to the other replicas; their listeners read the task again once Redis is back');
      this.publishFailing = true;
    }
  }

  subscribe(handle: string, listener: Listener): () => void {
    if (this.closed) return () => undefined;
    // A wrapper per subscription: the same function subscribed twice is called twice, and
    // unsubscribing one leaves the other, as with an EventEmitter.
    const entry: Listener = () => listener();
    let set = this.listeners.get(handle);
    if (!set) this.listeners.set(handle, (set = new Set()));
    set.add(entry);
    this.subscriber ??= this.connect();
    return () => {
      const current = this.listeners.get(handle);
      current?.delete(entry);
      if (current?.size === 0) this.listeners.delete(handle);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.nextNode);
    this.listeners.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (!subscriber) return;
    try {
      await subscriber.quit();
    } catch {
      subscriber.disconnect();
    }
  }

  private connect(): Redis {
    const client = createSubscriberClient(this.config, this.logger, 'taskgate-events', this.clusterNode());
    client.on('message', (channel: string, handle: string) => {
      if (channel === this.channel) this.call(this.listeners.get(handle));
    });
    client.on('ready', () => {
      // ioredis subscribes again by itself on reconnection; this SUBSCRIBE, sent after its own,
      // answers once the channel is subscribed for sure.
      client.subscribe(this.channel).then(
        () => this.onSubscribed(client),
        (error: unknown) => this.logger.warn({ store: 'redis', err: error }, 'task events: SUBSCRIBE failed; retried when the connection is ready again'),
      );
    });
    client.on('error', (error: Error) => {
      if (this.subscriberDown || this.closed) return;
      this.subscriberDown = true;
      this.logger.warn({ store: 'redis', err: error }, 'task events: subscriber connection lost; listeners read their tasks again once it is back');
    });
    if (this.config.mode === 'cluster') client.once('end', () => this.moveToNextNode(client));
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => {
        if (this.subscriber?.status === 'ready') this.subscriber.ping().catch(() => undefined);
      }, HEARTBEAT_MS);
      this.heartbeat.unref();
    }
    return client;
  }

  private onSubscribed(client: Redis): void {
    if (this.subscriber !== client || this.closed) return;
    if (this.subscriberDown) this.logger.info({ store: 'redis' }, 'task events: subscribed again');
    this.subscriberDown = false;
    // Announcements made while the channel was not subscribed are lost: every listener reads again.
    for (const set of [...this.listeners.values()]) this.call(set);
  }

  private moveToNextNode(client: Redis): void {
    if (this.closed || this.subscriber !== client) return;
    this.nextNode = setTimeout(() => {
      if (!this.closed) this.subscriber = this.connect();
    }, NEXT_NODE_DELAY_MS);
    this.nextNode.unref();
  }

  /** Cluster: the nodes the store's client knows now, else the configured ones, in turn. */
  private clusterNode(): { host: string; port: number } | undefined {
    if (this.config.mode !== 'cluster') return undefined;
    const known = (this.publisher as Cluster).nodes('all').map((node) => ({ host: node.options.host ?? '127.0.0.1', port: node.options.port ?? 6379 }));
    const candidates = known.length > 0 ? known : (this.config.nodes ?? []);
    return candidates[this.nodeTurn++ % candidates.length];
  }

  private call(set: Set<Listener> | undefined): void {
    if (!set) return;
    // A copy: a listener may unsubscribe (itself or another) while being called.
    for (const listener of [...set]) {
      try {
        listener();
      } catch (error) {
        this.logger.error({ store: 'redis', err: error }, 'a task event listener threw');
      }
    }
  }
}
