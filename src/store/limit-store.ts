/**
 * Per-principal limits kept in the store, so that every replica counts against one number
 * (DESIGN.md §4): call rates in fixed windows, calls in flight, and a principal suspended
 * for probing. An interface of its own beside Store, reached as `store.limits`: the task
 * operations and these counters change for different reasons.
 *
 * Every key a caller passes belongs to one principal (`owner`): the Redis implementation puts
 * all of one owner's keys in one hash slot, so each operation is one script, one round trip,
 * also on a Cluster.
 */

/** At most `limit` acquisitions in each fixed window of `windowMs`. */
export interface RateRule {
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
}

/** At most `max` slots held at once under `key`. */
export interface ConcurrencyRule {
  readonly key: string;
  readonly max: number;
}

export interface LimitClaim {
  /** The principal every key belongs to. */
  readonly owner: string;
  readonly rates: readonly RateRule[];
  readonly slots: readonly ConcurrencyRule[];
  /** Unique per call: the slot's name in each concurrency set, handed back to release. */
  readonly slotId: string;
  /**
   * A held slot is forgotten after this long even if never released, so the slots of a
   * replica that crashed mid-call are freed; keep it above the longest call.
   */
  readonly slotTtlMs: number;
  readonly now: number;
}

/**
 * All or nothing: either every window counted one more and every slot was taken, or nothing
 * changed and the first rule (rates first, in order) that refused is named.
 */
export type LimitVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly kind: 'rate' | 'concurrency'; readonly index: number; readonly retryAfterMs: number };

/** A refused task lookup, counted toward the enumeration threshold. */
export interface RefusalCount {
  /** Refusals in the current window, this one included. */
  readonly count: number;
  /** When the window (which starts at its first refusal) ends. */
  readonly resetAt: number;
}

export interface LimitStore {
  /** Counts and takes everything `claim` names, atomically, or nothing. */
  acquire(claim: LimitClaim): Promise<LimitVerdict>;
  /** Gives back the slots `acquire` took under `slotId`. */
  release(owner: string, slotKeys: readonly string[], slotId: string, now: number): Promise<void>;
  /**
   * Counts one refused lookup by `owner` in a window that starts at the first one and lasts
   * `windowMs`. The call that brings the count to `threshold` also suspends the owner until
   * the window ends (suspendedFor reads it).
   */
  countRefusal(owner: string, threshold: number, windowMs: number, now: number): Promise<RefusalCount>;
  /** Milliseconds the owner stays suspended, 0 when not suspended. */
  suspendedFor(owner: string, now: number): Promise<number>;
  /**
   * Suspends `owner` until `until` (an operator's act, src/console/), replacing a suspension in
   * force, however it started; the refusal count of the detector is left as it is.
   */
  suspend(owner: string, until: number, now: number): Promise<void>;
  /** Ends `owner`'s suspension, however it started; false when it was not suspended. */
  unsuspend(owner: string, now: number): Promise<boolean>;
}
