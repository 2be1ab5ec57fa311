/**
 * The state the gateway shares between requests (and, with the Redis store, between
 * replicas). Every operation is async so both stores keep one signature, and each is meant
 * to be one round trip to a shared store.
 */
import type { PollDecision, PollRules } from '../task-model/poll-rule.js';
import type { LimitStore } from './limit-store.js';
import type { ServerRequestRoute, TaskPatch, TaskRecord, TaskScope } from '../task-model/task-record.js';
import type { ProvidedStore, TaskEvents } from './provided-store.js';

import type { CreateTaskOutcome } from './create-outcome.js';

export type { CreateTaskOutcome };

/** The poll rules other than the interval, which is the task's own (its `pollIntervalMs`). */
export type PollLimits = Omit<PollRules, 'intervalMs'>;

/**
 * A poll decision; a poll that is not forwarded also gets the last snapshot, if any. A
 * forwarded one gets `snapshotTag` instead: an opaque token for the snapshot held (if any),
 * handed back to recordPoll so that an answer that has not changed is not written again.
 */
export type PollDecisionWithSnapshot = PollDecision & { readonly snapshot?: string; readonly snapshotTag?: string };

/**
 * What a tasks/get finds on the way in. Unknown and expired are `not_found`, a task outside
 * the caller's scope is `denied` (the client is told the same for both; the log and audit
 * tell them apart); only a `polled` task had its poll clock consulted and moved.
 */
export type PollOpening =
  | { readonly outcome: 'not_found' }
  | { readonly outcome: 'denied' }
  | { readonly outcome: 'polled'; readonly record: TaskRecord; readonly decision: PollDecisionWithSnapshot };

/** Position in an owner's task list, newest first; opaque to clients (see task-list.ts). */
export interface TaskListPosition {
  readonly createdAt: number;
  readonly handle: string;
}

/**
 * Where a scan of live tasks stands (scanLiveTasks): past the first `skip` tasks whose
 * expiresAt is `expiresAt`. Positions by count rather than by handle, so that a cursor never
 * carries a handle, wherever it is kept.
 */
export interface LiveTaskCursor {
  readonly expiresAt: number;
  readonly skip: number;
}

/**
 * What the store booked of a task's polls (the operator console, src/console/): every tasks/get
 * of its owner whose poll openPoll decided, by verdict, since the task was created, and when the
 * last one came. Kept beside the poll state and written by the same step that books the poll
 * (no round trip of its own); an invalidation (invalidatePoll, a gateway-run task's new status)
 * resets the poll clock and the snapshot, never these counts.
 */
export interface PollActivity {
  /** Polls let through: to the backend, or to a gateway-run task's state. */
  readonly forwarded: number;
  /** Polls before the interval: answered from the snapshot (poll.mode cached) or 429 (reject). */
  readonly early: number;
  /** Early polls past poll.abuseFactor: answered 429 in every mode. */
  readonly abusive: number;
  /** Epoch ms (the gateway's clock) of the last poll decided; absent before the first. */
  readonly lastPollAt?: number;
}

/** One page of a scan: the live records it found, and where the next page starts (none at the end). */
export interface LiveTaskPage {
  readonly records: TaskRecord[];
  readonly next?: LiveTaskCursor;
}

export interface Store extends ProvidedStore {
  readonly kind: 'memory' | 'redis';
  /** Task change announcements, across replicas on a shared store (provided-store.ts). */
  readonly events: TaskEvents;
  /** Per-principal call limits and suspensions (limit-store.ts), on the same connection. */
  readonly limits: LimitStore;

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
  /**
   * The unexpired tasks in `scope` (an owner's, of one era and upstream), newest first, starting
   * after `after`; the scope filter is part of the query, so a page is full whenever more exist.
   */
  listTasks(scope: TaskScope, after: TaskListPosition | undefined, limit: number): Promise<TaskRecord[]>;
  /**
   * Every unexpired task, whoever owns it, one bounded page at a time (the operator console,
   * src/console/): in the order of expiresAt, then handle, after `after`. A page reads at most
   * `limit` index entries, so it may hold fewer than `limit` records (entries whose record is
   * gone or expired are left out) while `next` still says more follow. Never a scan of the
   * whole keyspace: the Redis store pages through its expiry index.
   */
  scanLiveTasks(after: LiveTaskCursor | undefined, limit: number, now: number): Promise<LiveTaskPage>;
  /** Removes and returns up to `limit` tasks whose lifetime has ended. */
  takeExpiredTasks(now: number, limit: number): Promise<TaskRecord[]>;

  /**
   * A tasks/get on the way in, in one step: looks the task up, checks it against `scope`,
   * then decides the poll by decidePoll (src/task-model/poll-rule.ts) on the task's own
   * `pollIntervalMs` and books it, atomically (two replicas seeing one client's polls must
   * agree). Early polls also get the last snapshot. A task that is unknown, expired at `now`
   * or outside `scope` leaves the poll state as it was: a foreign principal's lookups never
   * move the owner's poll clock.
   */
  openPoll(handle: string, scope: TaskScope, now: number, limits: PollLimits): Promise<PollOpening>;
  /**
   * A forwarded tasks/get on the way back, in one step: the effect of updateTask(record.handle,
   * patch) together with storing `snapshot`, the answer the owner was given, which early polls
   * are served in cached mode. `record` is the task as read on the way in; the store takes
   * from it only what never changes (owner, creation time, backend id) to move the indexes
   * when the patch ends the task or moves its expiresAt. Nothing is written for a task that is
   * gone, nor when `snapshotTag` (from this poll's openPoll) says the store already holds this
   * snapshot and the patch changes nothing in `record`: most forwarded polls of a running task
   * hear what the last one heard.
   */
  recordPoll(record: TaskRecord, patch: TaskPatch, snapshot: string, snapshotTag?: string): Promise<void>;
  /**
   * The record and its poll snapshot (the last tasks/get answer the owner was given, if one is
   * held), without touching the poll clock: what a status notification of a backend task
   * carries (src/push/). Undefined when the task is unknown or expired.
   */
  readPollSnapshot(handle: string): Promise<{ readonly record: TaskRecord; readonly snapshot?: string } | undefined>;
  /**
   * Forgets a task's poll state and snapshot: after the client changed the task (update,
   * cancel) the snapshot is known to be stale, so the next poll is forwarded. Its poll
   * activity (readPollActivity) stays.
   */
  invalidatePoll(handle: string): Promise<void>;
  /**
   * The poll activity of each of `handles`, in order, without touching the poll clock (the
   * console's page of tasks: a bounded list, one read per handle, in parallel). A task never
   * polled, unknown or gone reads as no polls.
   */
  readPollActivity(handles: readonly string[]): Promise<PollActivity[]>;

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
