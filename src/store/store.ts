/**
 * The state the gateway shares between requests (and, with the Redis store, between
 * replicas). Every operation is async so both stores keep one signature, and each is meant
 * to be one round trip to a shared store.
 */
import type { PollDecision, PollRules } from '../tasks/poll-governor.js';
import type { ServerRequestRoute, TaskPatch, TaskRecord } from '../tasks/task-record.js';

export type CreateTaskOutcome = 'created' | 'owner-limit' | 'full';

/** Position in an owner's task list, newest first; opaque to clients (see task-list.ts). */
export interface TaskListPosition {
  readonly createdAt: number;
  readonly handle: string;
}

export interface Store {
  readonly kind: 'memory' | 'redis';

  /** The instance of a 2025-era session, refreshing its idle deadline to `ttlMs` from now. */
  touchSession(upstream: string, sessionId: string, ttlMs: number): Promise<string | undefined>;
  /** Records the instance that answered `initialize` for a 2025-era session; forgotten after `ttlMs` unused. */
  setSessionInstance(upstream: string, sessionId: string, instance: string, ttlMs: number): Promise<void>;
  deleteSession(upstream: string, sessionId: string): Promise<void>;

  /**
   * Stores a new task, unless its owner already has `maxLivePerOwner` tasks that are not
   * terminal, or the store is full. Resolves only once the record is readable by every
   * reader (the creation result is released after this).
   */
  createTask(record: TaskRecord, maxLivePerOwner: number): Promise<CreateTaskOutcome>;
  /** The record, or undefined when unknown or expired. */
  getTask(handle: string): Promise<TaskRecord | undefined>;
  updateTask(handle: string, patch: TaskPatch): Promise<void>;
  deleteTask(handle: string): Promise<void>;
  /** The handle of a backend task, for rewriting ids in backend→client messages. */
  findTaskHandle(upstream: string, instance: string, upstreamTaskId: string): Promise<string | undefined>;
  /** An owner's unexpired tasks, newest first, starting after `after`; the owner filter is part of the query. */
  listTasks(owner: string, after: TaskListPosition | undefined, limit: number): Promise<TaskRecord[]>;
  /** Removes and returns up to `limit` tasks whose lifetime has ended. */
  takeExpiredTasks(now: number, limit: number): Promise<TaskRecord[]>;

  /**
   * Decides a tasks/get against the task's poll state and records it, atomically (two
   * replicas seeing one client's polls must agree). Early polls also get the last snapshot.
   */
  checkPoll(handle: string, now: number, rules: PollRules): Promise<PollDecision & { snapshot?: string }>;
  /** The last tasks/get answer the owner was given, served to early polls in cached mode. */
  savePollSnapshot(handle: string, snapshot: string): Promise<void>;
  /**
   * Forgets a task's poll state and snapshot: after the client changed the task (update,
   * cancel) the snapshot is known to be stale, so the next poll is forwarded.
   */
  invalidatePoll(handle: string): Promise<void>;

  /**
   * Counts one event under `key` in the fixed window of `windowMs` that contains `now`, and
   * returns the count so far in that window with the window's end (rate limits).
   */
  countInWindow(key: string, windowMs: number, now: number): Promise<{ count: number; resetAt: number }>;

  /** Remembers where the answer to a relayed server→client request must go. */
  putServerRequest(id: string, route: ServerRequestRoute, ttlMs: number): Promise<void>;
  /** Returns and forgets the route of a relayed server→client request. */
  takeServerRequest(id: string): Promise<ServerRequestRoute | undefined>;

  /** Whether the store can serve requests now (readiness). */
  isReady(): Promise<boolean>;
  close(): Promise<void>;
}
