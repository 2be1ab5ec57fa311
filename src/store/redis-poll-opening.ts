/**
 * What a tasks/get reads from Redis on the way in, kept small. Most of a task's record is
 * fixed when the task is created (owner, backend id, instance, era, upstream, tool, ...); only
 * the properties a patch may change (LIVE_FIELDS) ever move. Each replica keeps the fixed part
 * of the records it has polled, by handle, and tells the opening script which record that is
 * (its createdAt); the script then returns only the live fields instead of the whole hash.
 *
 * What replicas must agree on is still read from Redis on every poll: the status and the
 * other live fields, the poll clock, the snapshot and its tag. The scope check (owner, era,
 * upstream) runs in the script against the stored record, never against this cache, so a
 * cached entry cannot let a request through that Redis would refuse. Handles are 192 random
 * bits and never reused, so a handle's fixed part cannot change while it is cached; an entry
 * is dropped when this replica deletes or sweeps the task, or a poll finds it gone.
 */
import type { PollDecision } from '../task-model/poll-rule.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { decodeTask, fixedFieldsOf, withLiveFields, type FixedFields } from './redis-task-hash.js';
import type { PollActivity, PollOpening } from './store.js';
import { TtlMap } from '../lifecycle/ttl-map.js';

/**
 * Records whose fixed part a replica keeps: `store.pollCacheTasks` (50,000 by default). An
 * entry is the record less its live fields, about 0.5–1 KB with the handle, backend id and
 * instance URL. Oldest in, first out (a TtlMap without deadlines) rather than least recently
 * used: a task pushed out costs one poll with the full record, not a round trip, and a hit
 * stays a plain Map read. It was a fixed 10,000 until the scale curves (docs/benchmarks.md,
 * "Scale") showed a replica polling more tasks in turn missing on every poll: +23–37 µs of
 * CPU each; operators now size it to the tasks a replica polls.
 */
export interface CachedFixed {
  /** The record's createdAt as Redis holds it (a decimal string), which the script compares. */
  readonly createdAt: string;
  readonly fields: Readonly<FixedFields>;
}

/** Index in the opening script's reply where the record's part begins: 'live' or 'full'. */
const FORM_AT = 7;

export class PollOpener {
  private readonly cache: TtlMap<CachedFixed> | undefined;
  /** Decrypts a task's snapshot (undefined when no configured key opens it). */
  private readonly openSnapshot: (sealed: string, handle: string) => string | undefined;

  constructor(capacity: number, openSnapshot: (sealed: string, handle: string) => string | undefined) {
    this.cache = capacity > 0 ? new TtlMap<CachedFixed>(capacity) : undefined;
    this.openSnapshot = openSnapshot;
  }

  /** The fixed part held for a handle: its createdAt goes with the opening ('' for none). */
  known(handle: string, now: number): CachedFixed | undefined {
    return this.cache?.get(handle, now);
  }

  forget(handle: string): void {
    this.cache?.delete(handle);
  }

  /**
   * The opening script's reply as a PollOpening, given what `known` returned before it was
   * sent. Errors on a reply of no known shape.
   */
  read(handle: string, reply: readonly unknown[], known: CachedFixed | undefined, now: number): PollOpening {
    const outcome = reply[0] as PollOpening['outcome'];
    if (outcome === 'not_found' || outcome === 'denied') {
      if (outcome === 'not_found') this.cache?.delete(handle);
      return { outcome };
    }
    const record = outcome === 'polled' ? this.recordOf(handle, reply, known, now) : undefined;
    if (!record) throw new Error(`taskgateOpenPoll answered ${String(outcome)} without a record`);
    const verdict = reply[1] as PollDecision['verdict'];
    const next = { lastForwardedAt: Number(reply[2]), earlyCount: Number(reply[3]) };
    const retryAfterMs = Number(reply[4]);
    if (verdict === 'forward') {
      const tag = reply[6];
      return { outcome, record, decision: typeof tag === 'string' ? { verdict, next, retryAfterMs, snapshotTag: tag } : { verdict, next, retryAfterMs } };
    }
    const sealed = reply[5];
    return { outcome, record, decision: { verdict, next, retryAfterMs, snapshot: typeof sealed === 'string' ? this.openSnapshot(sealed, handle) : undefined } };
  }

  private recordOf(handle: string, reply: readonly unknown[], known: CachedFixed | undefined, now: number): TaskRecord | undefined {
    const form = reply[FORM_AT];
    // The script answers 'live' only to the createdAt sent, which was known's.
    if (form === 'live') return known ? withLiveFields(known.fields, reply, FORM_AT + 1) : undefined;
    if (form !== 'full') return undefined;
    const record = decodeTask(reply.slice(FORM_AT + 1) as string[]);
    if (record) this.cache?.set(handle, { createdAt: String(record.createdAt), fields: fixedFieldsOf(record) }, Infinity, now);
    return record;
  }
}

/** The poll hash's fields of a task's poll activity, as check_poll books them (redis-scripts.ts). */
export const POLL_ACTIVITY_FIELDS = ['n:forward', 'n:early', 'n:abusive', 'at'] as const;

/** An HMGET of POLL_ACTIVITY_FIELDS as PollActivity: absent fields (never polled, gone) are none. */
export function pollActivityOf(values: readonly (string | null)[]): PollActivity {
  const [forwarded, early, abusive, at] = values;
  return {
    forwarded: Number(forwarded ?? 0),
    early: Number(early ?? 0),
    abusive: Number(abusive ?? 0),
    ...(at === null || at === undefined ? {} : { lastPollAt: Number(at) }),
  };
}
