/**
 * Poll governance (DESIGN.md §3): a tasks/get sooner than the interval the gateway last told
 * the client is early. The clock runs from the last poll that was forwarded, not from the
 * last poll of any kind: otherwise a client polling slightly too fast would reset the clock
 * every time and never be forwarded again. A poll accepted within the tolerance is booked at
 * the time it was due, not at its arrival, so the schedule cannot creep earlier by the
 * tolerance each cycle: over any span T the backend sees at most ceil(T / interval) + 1.
 * That holds only while the tolerance is shorter than the interval, which the policy alone
 * does not ensure (tasks.poll.tolerance defaults to 50 ms, the floor to 0 s, and a backend may
 * ask for 10 ms): a tolerance of n intervals would let n + 1 polls through back to back after
 * every pause. So the tolerance applied is at most the interval less 1 ms (none below 1 ms).
 *
 * decidePoll is pure so that both stores apply the same rule; the Redis store runs the same
 * steps in one Lua script, atomically across replicas.
 */

export interface PollState {
  /** Epoch ms of the last poll that reached the backend; undefined before the first. */
  lastForwardedAt?: number;
  /** Early polls since then. */
  earlyCount: number;
}

export interface PollRules {
  intervalMs: number;
  toleranceMs: number;
  /** More early polls than this within one interval is abuse, answered 429 in every mode. */
  abuseFactor: number;
}

export type PollVerdict = 'forward' | 'early' | 'abusive';

export interface PollDecision {
  verdict: PollVerdict;
  next: PollState;
  /** Until the next poll would be forwarded (0 when forwarded now). */
  retryAfterMs: number;
}

export function decidePoll(state: PollState | undefined, now: number, rules: PollRules): PollDecision {
  return decidePollAt(state, now, rules.intervalMs, rules);
}

/**
 * decidePoll with the interval apart from the other rules: a store deciding on a task's own
 * interval passes its policy limits as they are, without a rules object made per poll.
 */
export function decidePollAt(state: PollState | undefined, now: number, intervalMs: number, limits: Omit<PollRules, 'intervalMs'>): PollDecision {
  const last = state?.lastForwardedAt;
  const toleranceMs = Math.min(limits.toleranceMs, Math.max(0, intervalMs - 1));
  const allowedAt = last === undefined ? now : last + intervalMs - toleranceMs;
  if (now >= allowedAt) {
    const bookedAt = last === undefined ? now : Math.max(now, last + intervalMs);
    return { verdict: 'forward', next: { lastForwardedAt: bookedAt, earlyCount: 0 }, retryAfterMs: 0 };
  }
  const earlyCount = (state?.earlyCount ?? 0) + 1;
  return {
    verdict: earlyCount > limits.abuseFactor ? 'abusive' : 'early',
    next: { lastForwardedAt: last, earlyCount },
    retryAfterMs: allowedAt - now,
  };
}

/** The interval the client is told and held to: the backend's, raised to the floor. */
export function enforcedInterval(backendMs: number | undefined, floorMs: number, defaultMs: number): number {
  return Math.max(backendMs ?? defaultMs, floorMs);
}
