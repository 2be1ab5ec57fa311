/**
 * The shared store (DESIGN.md §4): many gateway replicas, one truth in Redis.
 *
 * The task record (in the handle's slot) is the truth; the indexes in other slots (owner,
 * backend id, expiry) are maintained beside it and every reader checks them against the
 * record, so an index entry left behind by a half-finished operation is ignored or repaired,
 * never served. Round trips per operation are listed in docs/operations.md.
 *
 * Every method rejects with StoreUnavailableError (503) when Redis cannot answer: at once
 * while the connection is down, within commandTimeout when Redis stalls.
 */
import { Cluster } from 'ioredis';
import pino, { type Logger } from 'pino';
import type { RedisStoreConfig } from '../config/sections/store.js';
import type { ProvidedState, ProvidedTaskView } from '../task-model/provided-state.js';
import { changesNothing, isInScope, isTerminalStatus, type ServerRequestRoute, type TaskPatch, type TaskRecord, type TaskScope } from '../task-model/task-record.js';
import { createRedisClient, logConnectionState, type RedisClient } from './redis-connection.js';
import { RedisKeys, handleOfListMember, listMember, ownKeys, pxTtl, taskKeyTtl } from './redis-keys.js';
import { RedisLimitStore } from './redis-limit-store.js';
import { RedisProvidedTasks } from './redis-provided.js';
import { PollOpener, pollActivityOf, POLL_ACTIVITY_FIELDS } from './redis-poll-opening.js';
import { defineStoreScripts } from './redis-scripts.js';
import { decodeTask, encodeTask, patchArgs } from './redis-task-hash.js';
import { RedisTaskEvents } from './redis-task-events.js';
import { RedisTaskIndexes } from './redis-task-indexes.js';
import { scanLiveTasks } from './redis-task-scan.js';
import { SnapshotCipher } from './snapshot-cipher.js';
import type { CreateTaskOutcome, LiveTaskCursor, LiveTaskPage, PollActivity, PollLimits, PollOpening, Store, TaskListPosition } from './store.js';
import { StoreUnavailableError } from './store-unavailable.js';

/** How long a sweeper holds expired handles it claimed before another replica may take them. */
const SWEEP_LEASE_MS = 15_000;

export interface RedisStoreDeps {
  logger?: Logger;
}

export class RedisStore implements Store {
  readonly kind = 'redis' as const;
  readonly keys: RedisKeys;
  readonly events: RedisTaskEvents;
  readonly limits: RedisLimitStore;
  private readonly client: RedisClient;
  private readonly indexes: RedisTaskIndexes;
  private readonly provided: RedisProvidedTasks;
  private readonly config: RedisStoreConfig;
  private readonly cipher: SnapshotCipher;
  private readonly logger: Logger;
  private readonly opener: PollOpener;

  constructor(config: RedisStoreConfig, deps: RedisStoreDeps = {}) {
    this.config = config;
    this.logger = deps.logger ?? pino({ level: 'silent' });
    this.keys = new RedisKeys(config.keyPrefix);
    this.cipher = new SnapshotCipher(config.snapshotKeys);
    this.opener = new PollOpener(config.pollCacheTasks, (sealed, handle) => this.openSnapshot(sealed, handle));
    this.client = createRedisClient(config, this.logger);
    this.indexes = new RedisTaskIndexes(this.client, this.keys);
    defineStoreScripts(this.client);
    this.provided = new RedisProvidedTasks({ client: this.client, keys: this.keys, indexes: this.indexes, cipher: this.cipher, logger: this.logger, cluster: config.mode === 'cluster' });
    this.events = new RedisTaskEvents(config, this.client, this.keys.events(), this.logger);
    this.limits = new RedisLimitStore(this.client, config.keyPrefix, (operation) => this.run(operation));
    logConnectionState(this.client, this.logger, config.mode);
  }

  /** Resolves once connected; for callers (tests, start-up) that would rather wait than fail. */
  async whenReady(timeoutMs = this.config.connectTimeout): Promise<void> {
    if (this.client.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.client.off('ready', onReady);
        reject(new StoreUnavailableError(new Error(`redis not ready within ${timeoutMs}ms`)));
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      this.client.once('ready', onReady);
    });
  }

  async touchSession(upstream: string, sessionId: string, ttlMs: number): Promise<string | undefined> {
    const instance = await this.run(() => this.client.getex(this.keys.session(upstream, sessionId), 'PX', pxTtl(ttlMs)));
    return instance ?? undefined;
  }

  async setSessionInstance(upstream: string, sessionId: string, instance: string, ttlMs: number): Promise<void> {
    await this.run(() => this.client.set(this.keys.session(upstream, sessionId), instance, 'PX', pxTtl(ttlMs)));
  }

  async deleteSession(upstream: string, sessionId: string): Promise<void> {
    await this.run(() => this.client.del(this.keys.session(upstream, sessionId)));
  }

  async createTask(record: TaskRecord, maxLivePerOwner: number): Promise<CreateTaskOutcome> {
    return this.run(() => this.create(record, maxLivePerOwner));
  }

  /** createTask, and with `sealedState` createProvidedTask: both kinds of task pass one path. */
  private async create(record: TaskRecord, maxLivePerOwner: number, sealedState?: string): Promise<CreateTaskOutcome> {
    const now = Date.now();
    const task = this.keys.task(record.handle);
    const owner = this.keys.owner(record.owner);
    const keyTtl = String(taskKeyTtl(record.expiresAt, now));
    const ownerArgs = [String(now), String(maxLivePerOwner), String(record.expiresAt), record.handle, listMember(record), isTerminalStatus(record.status) ? '0' : '1', keyTtl];
    const backend = this.keys.backend(record.upstream, record.instance, record.upstreamTaskId);
    if (this.config.mode !== 'cluster') {
      const keys = [owner.live, owner.tasks, task.record, backend, this.keys.expiry()];
      const outcome =
        sealedState === undefined
          ? await this.client.taskgateCreateTask(...keys, ...ownerArgs, ...encodeTask(record))
          : await this.client.taskgateCreateProvidedTask(...keys, task.provided, ...ownerArgs, sealedState, ...encodeTask(record));
      if (outcome === 'created') await this.waitForReplicas(task.record);
      return outcome as CreateTaskOutcome;
    }
    // Cluster: the owner's keys and the task's keys live in different slots. The owner step
    // goes first because it is the one that can refuse; if a later step fails, the
    // reservation is taken back (and, should that fail too, lapses at expiresAt).
    if ((await this.client.taskgateReserveOwner(owner.live, owner.tasks, ...ownerArgs)) === 'owner-limit') return 'owner-limit';
    try {
      await Promise.all([
        sealedState === undefined
          ? this.client.taskgateWriteTask(task.record, keyTtl, ...encodeTask(record))
          : this.client.taskgateWriteProvidedRecord(task.record, task.provided, keyTtl, sealedState, ...encodeTask(record)),
        this.client.set(backend, record.handle, 'PX', keyTtl),
        this.client.taskgateSyncExpiry(this.keys.expiry(), record.handle, String(record.expiresAt), keyTtl),
      ]);
    } catch (error) {
      await this.indexes.forget(record).catch(() => undefined);
      await this.client.del(task.record, task.provided).catch(() => undefined);
      throw error;
    }
    await this.waitForReplicas(task.record);
    return 'created';
  }

  async getTask(handle: string): Promise<TaskRecord | undefined> {
    const record = decodeTask(await this.run(() => this.client.hgetall(this.keys.task(handle).record)));
    return record && record.expiresAt > Date.now() ? record : undefined;
  }

  async updateTask(handle: string, patch: TaskPatch): Promise<void> {
    await this.run(async () => {
      const task = this.keys.task(handle);
      const reply = await this.client.taskgateUpdateTask(...ownKeys(task), ...patchArgs(patch, Date.now()));
      if (!reply) return;
      const [statusBefore, expiresAtBefore, ...fields] = reply;
      const record = decodeTask(fields as string[]);
      if (record) await this.indexes.followUpdate(record, statusBefore ?? null, expiresAtBefore ?? null);
    });
  }

  async deleteTask(handle: string): Promise<void> {
    this.opener.forget(handle);
    await this.run(async () => {
      const reply = await this.client.taskgateRemoveTask(...ownKeys(this.keys.task(handle)), '');
      const record = reply[0] === 'removed' ? decodeTask(reply.slice(1)) : undefined;
      if (record) await this.indexes.forget(record);
    });
  }

  async createProvidedTask(record: TaskRecord, state: ProvidedState, maxLivePerOwner: number): Promise<CreateTaskOutcome> {
    const sealed = this.provided.seal(record.handle, state);
    return this.run(() => this.create(record, maxLivePerOwner, sealed));
  }

  async readProvidedTask(handle: string): Promise<ProvidedTaskView | undefined> {
    return this.run(() => this.provided.read(handle));
  }

  async writeProvidedTask(handle: string, rev: number, patch: TaskPatch, state: ProvidedState): Promise<boolean> {
    return this.run(() => this.provided.write(handle, rev, patch, state));
  }

  async writeProvidedProgress(handle: string, statusMessage: string, lastUpdatedAtIso: string): Promise<boolean> {
    return this.run(() => this.provided.writeProgress(handle, statusMessage, lastUpdatedAtIso));
  }

  async holdLease(handle: string, holder: string, until: number): Promise<boolean> {
    return this.run(() => this.provided.holdLease(handle, holder, until));
  }

  async releaseLease(handle: string, holder: string): Promise<void> {
    await this.run(() => this.provided.releaseLease(handle, holder));
  }

  async takeLapsedLeases(now: number, limit: number): Promise<string[]> {
    return this.run(() => this.provided.takeLapsedLeases(now, limit));
  }

  async findTaskHandle(upstream: string, instance: string, upstreamTaskId: string): Promise<string | undefined> {
    const handle = await this.run(() => this.client.get(this.keys.backend(upstream, instance, upstreamTaskId)));
    return handle ?? undefined;
  }

  async listTasks(scope: TaskScope, after: TaskListPosition | undefined, limit: number): Promise<TaskRecord[]> {
    return this.run(async () => {
      const now = Date.now();
      const key = this.keys.owner(scope.owner).tasks;
      const page: TaskRecord[] = [];
      const dangling: string[] = [];
      let from = after ? `(${listMember(after)}` : '-';
      while (page.length < limit) {
        const members = await this.client.zrangebylex(key, from, '+', 'LIMIT', 0, limit);
        const records = await Promise.all(members.map((m) => this.client.hgetall(this.keys.task(handleOfListMember(m)).record)));
        members.forEach((member, i) => {
          const record = decodeTask(records[i]!);
          if (!record) dangling.push(member);
          else if (isInScope(record, scope) && record.expiresAt > now && page.length < limit) page.push(record);
        });
        if (members.length < limit) break;
        from = `(${members.at(-1)!}`;
      }
      // Entries whose record is gone (a deletion whose index step failed) are dropped here.
      if (dangling.length > 0) await this.client.zrem(key, ...dangling);
      return page;
    });
  }

  async scanLiveTasks(after: LiveTaskCursor | undefined, limit: number, now: number): Promise<LiveTaskPage> {
    return this.run(() => scanLiveTasks(this.client, this.keys, after, limit, now));
  }

  async takeExpiredTasks(now: number, limit: number): Promise<TaskRecord[]> {
    return this.run(async () => {
      const expiry = this.keys.expiry();
      const due = await this.client.taskgateClaimExpired(expiry, String(now), String(limit), String(now + SWEEP_LEASE_MS), String(taskKeyTtl(now + SWEEP_LEASE_MS, now)));
      const replies = await Promise.all(
        due.map((handle) => this.client.taskgateRemoveTask(...ownKeys(this.keys.task(handle)), String(now))),
      );
      const taken: TaskRecord[] = [];
      const settled: Promise<unknown>[] = [];
      replies.forEach((reply, i) => {
        const handle = due[i]!;
        const record = reply[0] === 'removed' ? decodeTask(reply.slice(1)) : undefined;
        if (reply[0] !== 'live') this.opener.forget(handle);
        if (record) {
          taken.push(record);
          settled.push(this.indexes.forget(record));
        } else if (reply[0] === 'live') {
          // Its lifetime was extended after it was indexed: back in line at the new time.
          settled.push(this.indexes.requeue(handle, Number(reply[1])));
        } else {
          settled.push(this.client.zrem(expiry, handle));
        }
      });
      await Promise.all(settled);
      return taken;
    });
  }

  async openPoll(handle: string, scope: TaskScope, now: number, limits: PollLimits): Promise<PollOpening> {
    const task = this.keys.task(handle);
    // With the record's fixed part held here, the script returns only its live fields.
    const known = this.opener.known(handle, now);
    const reply = await this.run(() =>
      this.client.taskgateOpenPoll(task.record, task.poll, task.snapshot, String(now), scope.owner, scope.era, scope.upstream, String(limits.toleranceMs), String(limits.abuseFactor), known?.createdAt ?? ''),
    );
    return this.opener.read(handle, reply, known, now);
  }

  async recordPoll(record: TaskRecord, patch: TaskPatch, snapshot: string, snapshotTag?: string): Promise<void> {
    const tag = this.cipher.tag(snapshot, record.handle);
    // The same answer as last time, on a record it would not change: a round trip, a seal and
    // a script saved on most forwarded polls. Another replica's write since the openPoll that
    // read the tag is left in place, as it would be had this poll been answered first.
    if (tag === snapshotTag && changesNothing(record, patch)) return;
    const task = this.keys.task(record.handle);
    // Sealed and sent before the first await, so the command is on the connection (ordered
    // before this replica's next command) by the time this call returns its promise.
    const sealed = this.cipher.seal(snapshot, record.handle);
    await this.run(async () => {
      const before = await this.client.taskgateRecordPoll(...ownKeys(task), sealed, tag, ...patchArgs(patch, Date.now()));
      if (!before) return;
      const [statusBefore, expiresAtBefore] = before;
      // The script changed only what the patch names: the rest of the record is as read.
      const after: TaskRecord = {
        ...record,
        ...patch,
        status: patch.status ?? (statusBefore as TaskRecord['status'] | null) ?? record.status,
        expiresAt: patch.expiresAt ?? (expiresAtBefore === null ? record.expiresAt : Number(expiresAtBefore)),
      };
      await this.indexes.followUpdate(after, statusBefore, expiresAtBefore);
    });
  }

  async readPollSnapshot(handle: string): Promise<{ record: TaskRecord; snapshot?: string } | undefined> {
    const task = this.keys.task(handle);
    const [fields, sealed] = await this.run(() => Promise.all([this.client.hgetall(task.record), this.client.get(task.snapshot)]));
    const record = decodeTask(fields);
    if (!record || record.expiresAt <= Date.now()) return undefined;
    return { record, snapshot: typeof sealed === 'string' ? this.openSnapshot(sealed, handle) : undefined };
  }

  async invalidatePoll(handle: string): Promise<void> {
    const task = this.keys.task(handle);
    await this.run(() => this.client.taskgateForgetPoll(task.poll, task.snapshot));
  }

  async readPollActivity(handles: readonly string[]): Promise<PollActivity[]> {
    return this.run(() => Promise.all(handles.map(async (handle) => pollActivityOf(await this.client.hmget(this.keys.task(handle).poll, ...POLL_ACTIVITY_FIELDS)))));
  }

  async countInWindow(key: string, windowMs: number, now: number): Promise<{ count: number; resetAt: number }> {
    const start = now - (now % windowMs);
    const resetAt = start + windowMs;
    const count = await this.run(() => this.client.taskgateCountInWindow(this.keys.window(key, start), String(pxTtl(resetAt - now))));
    return { count, resetAt };
  }

  async putServerRequest(id: string, route: ServerRequestRoute, ttlMs: number): Promise<void> {
    await this.run(() => this.client.set(this.keys.serverRequest(id), JSON.stringify(route), 'PX', pxTtl(ttlMs)));
  }

  async takeServerRequest(id: string): Promise<ServerRequestRoute | undefined> {
    const route = await this.run(() => this.client.getdel(this.keys.serverRequest(id)));
    return route === null ? undefined : (JSON.parse(route) as ServerRequestRoute);
  }

  async isReady(): Promise<boolean> {
    if (this.client.status !== 'ready') return false;
    try {
      return (await this.client.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.events.close();
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }

  /**
   * Fails fast while the connection is down (so calls never queue) and turns every failure
   * into the one error the gateway answers 503 for.
   */
  private async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.client.status !== 'ready') throw new StoreUnavailableError(new Error(`redis connection is ${this.client.status}`));
    try {
      return await operation();
    } catch (error) {
      throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error);
    }
  }

  /** WAIT on the connection that wrote the record, so the acknowledgement is for that write. */
  private async waitForReplicas(recordKey: string): Promise<void> {
    const { replicas, timeout } = this.config.waitReplicas;
    if (replicas === 0) return;
    let acknowledged: number;
    if (this.client instanceof Cluster) {
      // A pipeline goes to one node: the one holding the record, picked by its key.
      const results = await this.client.pipeline().pttl(recordKey).wait(replicas, timeout).exec();
      const [error, value] = results?.[1] ?? [new Error('no reply to WAIT'), 0];
      if (error) throw error;
      acknowledged = Number(value);
    } else {
      acknowledged = await this.client.wait(replicas, timeout);
    }
    if (acknowledged < replicas) {
      this.logger.warn({ store: 'redis', replicas, acknowledged }, 'a new task record reached fewer replicas than store.waitReplicas asks');
    }
  }

  private openSnapshot(sealed: string, handle: string): string | undefined {
    const snapshot = this.cipher.open(sealed, handle);
    if (snapshot === undefined) this.logger.warn({ store: 'redis' }, 'a poll snapshot could not be decrypted (its key is no longer in store.snapshotKeys?); the poll is answered without it');
    return snapshot;
  }
}
