/**
 * The Redis store's key names. Keys one operation must change together share a Cluster hash
 * slot through a hash tag (`{...}`):
 *
 *   <prefix>task:{<handle>}            hash: the record, one field per property
 *   <prefix>poll:{<handle>}            hash: poll state (last forwarded, early count, snapshot
 *                                      tag) and poll activity (counts by verdict, last poll)
 *   <prefix>snapshot:{<handle>}        string: the sealed poll snapshot
 *   <prefix>provided:{<handle>}        string: a provided task's sealed state (its revision is
 *                                      the record's `rev` field)
 *   <prefix>lease:{<handle>}           hash: a provided task's lease (holder, until)
 *   <prefix>owner:{<digest>}:live      sorted set: handles not terminal, by expiresAt
 *   <prefix>owner:{<digest>}:tasks     sorted set (lexical): every handle, newest first
 *   <prefix>backend:<digest>           string: backend task id → handle
 *   <prefix>expiry                     sorted set: handles by expiresAt, for the sweeper
 *   <prefix>leases                     sorted set: handles by lease end (or earlier), for
 *                                      takeLapsedLeases
 *   <prefix>session:<digest>           string: 2025 session → instance
 *   <prefix>server-request:<digest>    string: a relayed server→client request's route
 *   <prefix>window:<digest>:<start>    counter of a fixed rate-limit window
 *
 * Not a key: <prefix>task-events is the Pub/Sub channel of task change announcements
 * (redis-task-events.ts).
 *
 * Anything a backend or client chose (session ids, backend task ids, owners, rate keys) is
 * digested: it is then bounded in length and can never contain a `{` that would move a key
 * into another slot. Handles are the gateway's own base64url and go in as they are.
 *
 * Every key has a TTL, so Redis forgets what the gateway forgets even where a step that
 * would have deleted a key never ran.
 */
import { createHash } from 'node:crypto';
import type { TaskListPosition } from './store.js';

/** Later than any Date (8.64e15 ms), so `LATEST - createdAt` is never negative. */
const LATEST = 8_640_000_000_000_000;
const ORDER_DIGITS = 16;
/**
 * Task keys outlive expiresAt by this much: the sweeper must still find the record to cancel
 * the task upstream, and the gateway never serves it past expiresAt anyway.
 */
const TASK_KEY_MARGIN_MS = 60_000;

export class RedisKeys {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** The keys of one task, all in the handle's slot. */
  task(handle: string): TaskKeys {
    return {
      record: `${this.prefix}task:{${handle}}`,
      poll: `${this.prefix}poll:{${handle}}`,
      snapshot: `${this.prefix}snapshot:{${handle}}`,
      provided: `${this.prefix}provided:{${handle}}`,
      lease: `${this.prefix}lease:{${handle}}`,
    };
  }

  /** The keys of one owner, all in the owner's slot. */
  owner(owner: string): { live: string; tasks: string } {
    const tag = digest(owner);
    return { live: `${this.prefix}owner:{${tag}}:live`, tasks: `${this.prefix}owner:{${tag}}:tasks` };
  }

  backend(upstream: string, instance: string, upstreamTaskId: string): string {
    return `${this.prefix}backend:${digest(`${upstream}\u0000${instance}\u0000${upstreamTaskId}`)}`;
  }

  expiry(): string {
    return `${this.prefix}expiry`;
  }

  leases(): string {
    return `${this.prefix}leases`;
  }

  /** A Pub/Sub channel, not a key: Cluster routes no PUBLISH by it. */
  events(): string {
    return `${this.prefix}task-events`;
  }

  session(upstream: string, sessionId: string): string {
    return `${this.prefix}session:${digest(`${upstream}\u0000${sessionId}`)}`;
  }

  serverRequest(id: string): string {
    return `${this.prefix}server-request:${digest(id)}`;
  }

  window(key: string, start: number): string {
    return `${this.prefix}window:${digest(key)}:${start}`;
  }
}

export interface TaskKeys {
  readonly record: string;
  readonly poll: string;
  readonly snapshot: string;
  readonly provided: string;
  readonly lease: string;
}

/**
 * Every key of one task, in the order the scripts that patch or remove a record take them
 * (redis-scripts.ts): a change of the task's lifetime moves them all, a removal deletes them all.
 */
export function ownKeys(task: TaskKeys): string[] {
  return [task.record, task.poll, task.snapshot, task.provided, task.lease];
}

/**
 * A task's member in its owner's list. Every member has score 0, so the set is ordered by the
 * member's bytes: the inverted creation time first (newest first), then the handle (ties in
 * the same order as the memory store), and a page after a position is one ZRANGEBYLEX.
 */
export function listMember(position: TaskListPosition): string {
  return `${String(LATEST - position.createdAt).padStart(ORDER_DIGITS, '0')}:${position.handle}`;
}

export function handleOfListMember(member: string): string {
  return member.slice(ORDER_DIGITS + 1);
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 32);
}

/** How long the keys of a task (and the index entries naming it) live, for PX and PEXPIRE. */
export function taskKeyTtl(expiresAt: number, now: number): number {
  return pxTtl(expiresAt + TASK_KEY_MARGIN_MS - now);
}

/** PX and PEXPIRE take whole milliseconds above zero. */
export function pxTtl(ms: number): number {
  return Math.max(1, Math.ceil(ms));
}
