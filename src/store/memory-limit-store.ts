/** Per-principal limits for one process (the memory store): bounded maps, nothing shared. */
import type { LimitClaim, LimitStore, LimitVerdict, RefusalCount } from './limit-store.js';
import { TtlMap } from '../lifecycle/ttl-map.js';

/** A held slot is assumed to free within this long: the Retry-After of a concurrency refusal. */
const CONCURRENCY_RETRY_MS = 1000;

export interface MemoryLimitStoreOptions {
  /** Rate windows, slot sets and refusal windows held at once (each map); oldest make room. */
  maxEntries?: number;
}

export class MemoryLimitStore implements LimitStore {
  private readonly windows: TtlMap<{ start: number; count: number }>;
  /** Slot key → slot id → when the slot lapses. */
  private readonly slots: TtlMap<Map<string, number>>;
  private readonly refusals: TtlMap<RefusalCount>;
  private readonly suspended: TtlMap<number>;

  constructor(options: MemoryLimitStoreOptions = {}) {
    const max = options.maxEntries ?? 100_000;
    this.windows = new TtlMap(max);
    this.slots = new TtlMap(max);
    this.refusals = new TtlMap(max);
    this.suspended = new TtlMap(max);
  }

  async acquire(claim: LimitClaim): Promise<LimitVerdict> {
    const { now } = claim;
    for (const [index, rule] of claim.rates.entries()) {
      const start = now - (now % rule.windowMs);
      const current = this.windows.get(scoped(claim.owner, rule.key), now);
      const count = current && current.start === start ? current.count : 0;
      if (count >= rule.limit) return { allowed: false, kind: 'rate', index, retryAfterMs: start + rule.windowMs - now };
    }
    for (const [index, rule] of claim.slots.entries()) {
      const held = this.liveSlots(scoped(claim.owner, rule.key), now);
      if (held.size >= rule.max) return { allowed: false, kind: 'concurrency', index, retryAfterMs: CONCURRENCY_RETRY_MS };
    }
    for (const rule of claim.rates) {
      const start = now - (now % rule.windowMs);
      const current = this.windows.get(scoped(claim.owner, rule.key), now);
      const count = current && current.start === start ? current.count + 1 : 1;
      this.windows.set(scoped(claim.owner, rule.key), { start, count }, start + rule.windowMs - now, now);
    }
    for (const rule of claim.slots) {
      const held = this.liveSlots(scoped(claim.owner, rule.key), now);
      held.set(claim.slotId, now + claim.slotTtlMs);
      this.slots.set(scoped(claim.owner, rule.key), held, claim.slotTtlMs, now);
    }
    return { allowed: true };
  }

  async release(owner: string, slotKeys: readonly string[], slotId: string, now: number): Promise<void> {
    for (const key of slotKeys.map((slotKey) => scoped(owner, slotKey))) {
      const held = this.slots.get(key, now);
      if (!held) continue;
      held.delete(slotId);
      if (held.size === 0) this.slots.delete(key);
    }
  }

  async countRefusal(owner: string, threshold: number, windowMs: number, now: number): Promise<RefusalCount> {
    const current = this.refusals.get(owner, now);
    // The window starts at the first refusal and is not extended by later ones.
    const next = current ? { count: current.count + 1, resetAt: current.resetAt } : { count: 1, resetAt: now + windowMs };
    if (current) this.refusals.update(owner, next, now);
    else this.refusals.set(owner, next, windowMs, now);
    if (next.count >= threshold) this.suspended.set(owner, next.resetAt, next.resetAt - now, now);
    return next;
  }

  async suspendedFor(owner: string, now: number): Promise<number> {
    const until = this.suspended.get(owner, now);
    return until === undefined ? 0 : until - now;
  }

  async suspend(owner: string, until: number, now: number): Promise<void> {
    if (until > now) this.suspended.set(owner, until, until - now, now);
    else this.suspended.delete(owner);
  }

  async unsuspend(owner: string, now: number): Promise<boolean> {
    const held = this.suspended.get(owner, now) !== undefined;
    this.suspended.delete(owner);
    return held;
  }

  /** The slots under `key` that have not lapsed (a crashed caller's lapse here too). */
  private liveSlots(key: string, now: number): Map<string, number> {
    const held = this.slots.get(key, now) ?? new Map<string, number>();
    for (const [id, lapsesAt] of held) if (lapsesAt <= now) held.delete(id);
    return held;
  }

  /** Drops lapsed entries; the memory store calls it on its sweep timer. */
  sweep(): void {
    this.windows.sweep();
    this.slots.sweep();
    this.refusals.sweep();
    this.suspended.sweep();
  }

  clear(): void {
    this.windows.clear();
    this.slots.clear();
    this.refusals.clear();
    this.suspended.clear();
  }
}

/** Keys are per principal: the caller's rule keys name a limit, not whose count it is. */
function scoped(owner: string, key: string): string {
  return `${owner}\u0000${key}`;
}
