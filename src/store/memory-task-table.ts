/**
 * The memory store's task records: the primary map plus the indexes the gateway reads by
 * (backend id → handle, owner → handles, expiry second → handles). Bounded by `maxTasks`;
 * expiry is checked on every read and swept by takeExpired, so an expired record is never
 * served. The expiry index keeps a sweep proportional to what expired, not to what is stored.
 *
 * Records are replaced whole by an update, never changed in place: a reader (a poll, above
 * all) is handed the stored object itself, with no copy, and nothing the store does later
 * changes what it holds. Readers must not change it either (nothing in src/ does). The records
 * are not Object.freeze'd to enforce that: in V8 a frozen record cost about 580 B more heap per
 * live task (bench memory check: 925 → 1,500 B per task at 10,000 tasks). A poll allocates
 * only its decision and its answer.
 */
import type { CreateTaskOutcome, LiveTaskCursor, LiveTaskPage, PollActivity, PollLimits, PollOpening, TaskListPosition } from './store.js';
import { byExpiry, nextLiveTaskCursor } from './live-task-scan.js';
import { ExpiryIndex } from './memory-expiry-index.js';
import { OwnerIndex } from './memory-owner-index.js';
import { LAPSED_LEASE_CLAIM_MS, TAKEN_LEASE_HOLDER } from './provided-store.js';
import { decidePollAt, type PollState, type PollVerdict } from '../task-model/poll-rule.js';
import type { ProvidedState, ProvidedTaskView } from '../task-model/provided-state.js';
import { isInScope, isTerminalStatus, type TaskPatch, type TaskRecord, type TaskScope } from '../task-model/task-record.js';

export class MemoryTaskTable {
  private readonly records = new Map<string, Readonly<TaskRecord>>();
  private readonly byUpstreamId = new Map<string, string>();
  /** Each owner's handles in tasks/list's order (memory-owner-index.ts). */
  private readonly byOwner = new OwnerIndex((handle) => this.records.get(handle)!);
  private readonly polls = new Map<string, PollEntry>();
  private readonly expiring = new ExpiryIndex();
  /**
   * Tasks per owner that are not terminal, kept in step with every write: counting them at
   * creation by reading the owner's records made creation slower the more tasks an owner held
   * (the benchmark saw 256 → 572 µs per creation).
   */
  private readonly liveByOwner = new Map<string, number>();
  /** Provided tasks' state and revision (src/store/provided-store.ts), kept with the record. */
  private readonly provided = new Map<string, { state: ProvidedState; rev: number }>();
  /** Provided tasks' leases: which replica runs the backend call, until when. */
  private readonly leases = new Map<string, { holder: string; until: number }>();
  private readonly maxTasks: number;

  constructor(maxTasks: number) {
    this.maxTasks = maxTasks;
  }

  get size(): number {
    return this.records.size;
  }

  create(record: TaskRecord, maxLivePerOwner: number, now: number): CreateTaskOutcome {
    const live = this.liveByOwner.get(record.owner) ?? 0;
    // Only at the limit is the owner's list read: expired tasks the sweeper has not reached yet
    // must not count (they stay for the sweeper, which cancels running ones upstream).
    if (live >= maxLivePerOwner && live - this.expiredLive(record.owner, now) >= maxLivePerOwner) return 'owner-limit';
    if (this.records.size >= this.maxTasks) return 'full';
    // A copy, so later changes by the caller never alter stored state behind the store's back.
    this.records.set(record.handle, { ...record });
    this.byUpstreamId.set(upstreamKey(record.upstream, record.instance, record.upstreamTaskId), record.handle);
    this.byOwner.add(record.owner, record);
    this.indexExpiry(record.handle, record.expiresAt);
    if (!isTerminalStatus(record.status)) this.countLive(record.owner, 1);
    return 'created';
  }

  get(handle: string, now: number): TaskRecord | undefined {
    const record = this.records.get(handle);
    if (!record) return undefined;
    if (record.expiresAt <= now) return undefined;
    return record;
  }

  update(handle: string, patch: TaskPatch): void {
    const record = this.records.get(handle);
    if (!record) return;
    if (patch.expiresAt !== undefined && patch.expiresAt !== record.expiresAt) {
      this.unindexExpiry(handle, record.expiresAt);
      this.indexExpiry(handle, patch.expiresAt);
    }
    if (patch.status !== undefined && isTerminalStatus(patch.status) !== isTerminalStatus(record.status)) {
      this.countLive(record.owner, isTerminalStatus(patch.status) ? -1 : 1);
    }
    this.records.set(handle, { ...record, ...patch });
  }

  delete(handle: string): void {
    const record = this.records.get(handle);
    if (!record) return;
    // First, while the record is there: the owner's order is searched through the records.
    this.byOwner.remove(record.owner, record);
    this.records.delete(handle);
    this.polls.delete(handle);
    this.provided.delete(handle);
    this.leases.delete(handle);
    this.unindexExpiry(handle, record.expiresAt);
    if (!isTerminalStatus(record.status)) this.countLive(record.owner, -1);
    this.byUpstreamId.delete(upstreamKey(record.upstream, record.instance, record.upstreamTaskId));
  }

  /** Lookup, scope check and poll decision; poll state is touched only for a task in scope. */
  openPoll(handle: string, scope: TaskScope, now: number, limits: PollLimits): PollOpening {
    const record = this.records.get(handle);
    if (!record || record.expiresAt <= now) return { outcome: 'not_found' };
    if (!isInScope(record, scope)) return { outcome: 'denied' };
    let entry = this.polls.get(handle);
    const { verdict, next, retryAfterMs } = decidePollAt(entry, now, record.pollIntervalMs, limits);
    if (entry) {
      entry.lastForwardedAt = next.lastForwardedAt;
      entry.earlyCount = next.earlyCount;
    } else {
      entry = new PollEntry(next.lastForwardedAt, next.earlyCount);
      this.polls.set(handle, entry);
    }
    entry.book(verdict, now);
    const snapshot = entry.snapshot;
    return {
      outcome: 'polled',
      record,
      decision: verdict === 'forward' ? { verdict, next, retryAfterMs, snapshotTag: snapshot } : { verdict, next, retryAfterMs, snapshot },
    };
  }

  /** The record follows the patch and the snapshot is kept, both only while the task exists. */
  recordPoll(handle: string, patch: TaskPatch, snapshot: string): void {
    if (!this.records.has(handle)) return;
    this.update(handle, patch);
    const entry = this.polls.get(handle);
    if (entry) entry.snapshot = snapshot;
    else this.polls.set(handle, new PollEntry(undefined, 0, snapshot));
  }

  readPollSnapshot(handle: string, now: number): { record: TaskRecord; snapshot?: string } | undefined {
    const record = this.get(handle, now);
    return record && { record, snapshot: this.polls.get(handle)?.snapshot };
  }

  invalidatePoll(handle: string): void {
    this.polls.get(handle)?.reset();
  }

  pollActivity(handle: string): PollActivity {
    const entry = this.polls.get(handle);
    if (!entry || !this.records.has(handle)) return NO_POLLS;
    return { forwarded: entry.forwarded, early: entry.early, abusive: entry.abusive, ...(entry.lastPollAt === undefined ? {} : { lastPollAt: entry.lastPollAt }) };
  }

  createProvided(record: TaskRecord, state: ProvidedState, maxLivePerOwner: number, now: number): CreateTaskOutcome {
    const outcome = this.create(record, maxLivePerOwner, now);
    if (outcome === 'created') this.provided.set(record.handle, { state: structuredClone(state), rev: 1 });
    return outcome;
  }

  readProvided(handle: string, now: number): ProvidedTaskView | undefined {
    const record = this.get(handle, now);
    const entry = this.provided.get(handle);
    return record && entry ? { record, state: structuredClone(entry.state), rev: entry.rev } : undefined;
  }

  writeProvided(handle: string, rev: number, patch: TaskPatch, state: ProvidedState, now: number): boolean {
    const record = this.records.get(handle);
    const entry = this.provided.get(handle);
    if (!record || !entry || record.expiresAt <= now || entry.rev !== rev || isTerminalStatus(record.status)) return false;
    if (patch.status !== undefined && patch.status !== record.status) this.polls.get(handle)?.reset();
    this.update(handle, patch);
    entry.state = structuredClone(state);
    entry.rev = rev + 1;
    return true;
  }

  writeProvidedProgress(handle: string, statusMessage: string, lastUpdatedAtIso: string, now: number): boolean {
    const record = this.records.get(handle);
    if (!record || !this.provided.has(handle) || record.expiresAt <= now || isTerminalStatus(record.status)) return false;
    this.update(handle, { statusMessage, lastUpdatedAtIso });
    return true;
  }

  holdLease(handle: string, holder: string, until: number, now: number): boolean {
    const record = this.records.get(handle);
    if (!record || record.expiresAt <= now || isTerminalStatus(record.status)) return false;
    const lease = this.leases.get(handle);
    if (lease && lease.holder !== holder && lease.until > now) return false;
    this.leases.set(handle, { holder, until });
    return true;
  }

  releaseLease(handle: string, holder: string): void {
    if (this.leases.get(handle)?.holder === holder) this.leases.delete(handle);
  }

  /**
   * A lapsed lease is handed out once: taking it holds it under no replica's name for
   * LAPSED_LEASE_CLAIM_MS (provided-store.ts). Those of tasks that ended or expired are dropped.
   */
  takeLapsedLeases(now: number, limit: number): string[] {
    const lapsed: string[] = [];
    for (const [handle, lease] of this.leases) {
      if (lapsed.length >= limit) break;
      if (lease.until >= now) continue;
      const record = this.records.get(handle);
      if (!record || record.expiresAt <= now || isTerminalStatus(record.status)) this.leases.delete(handle);
      else lapsed.push(handle);
    }
    for (const handle of lapsed) this.leases.set(handle, { holder: TAKEN_LEASE_HOLDER, until: now + LAPSED_LEASE_CLAIM_MS });
    return lapsed;
  }

  findHandle(upstream: string, instance: string, upstreamTaskId: string): string | undefined {
    return this.byUpstreamId.get(upstreamKey(upstream, instance, upstreamTaskId));
  }

  list(scope: TaskScope, after: TaskListPosition | undefined, limit: number, now: number): TaskRecord[] {
    const page: TaskRecord[] = [];
    for (const handle of this.byOwner.newestFirst(scope.owner, after)) {
      if (page.length >= limit) break;
      const record = this.get(handle, now);
      if (record && isInScope(record, scope)) page.push(record);
    }
    return page;
  }

  /**
   * scanLiveTasks (store.ts): the expiry index's seconds in order from the cursor's, each
   * second's records sorted, until the page is full; a page costs the seconds and records it
   * reads, not the store's size. Expired records the sweeper has not reached yet count as
   * index entries (as in Redis) but are left out of the page.
   */
  scanLive(after: LiveTaskCursor | undefined, limit: number, now: number): LiveTaskPage {
    const from = after?.expiresAt ?? now + 1;
    const skip = after?.skip ?? 0;
    const entries: TaskRecord[] = [];
    for (const [, handles] of this.expiring.from(from)) {
      // Across seconds the index gives the order; within one, the least of its records by
      // expiresAt and handle, only as many as the page still needs (a burst of creations puts
      // tens of thousands in one second: sorting them all per page is what this avoids).
      for (const record of leastOf(handles, this.records, from, skip + limit - entries.length)) entries.push(record);
      if (entries.length >= skip + limit) break;
    }
    const read = entries.slice(skip, skip + limit);
    const next = nextLiveTaskCursor(after, read.map((record) => record.expiresAt), limit);
    return { records: read.filter((record) => record.expiresAt > now), ...(next ? { next } : {}) };
  }

  takeExpired(now: number, limit: number): TaskRecord[] {
    const expired: TaskRecord[] = [];
    for (const [, handles] of this.expiring.due(now)) {
      if (expired.length >= limit) break;
      for (const handle of handles) {
        if (expired.length >= limit) break;
        const record = this.records.get(handle);
        if (record && record.expiresAt <= now) expired.push(record);
      }
    }
    for (const record of expired) this.delete(record.handle);
    return expired;
  }

  private expiredLive(owner: string, now: number): number {
    let expired = 0;
    for (const handle of this.byOwner.handlesOf(owner)) {
      const record = this.records.get(handle);
      if (record && record.expiresAt <= now && !isTerminalStatus(record.status)) expired++;
    }
    return expired;
  }

  private countLive(owner: string, delta: number): void {
    const next = (this.liveByOwner.get(owner) ?? 0) + delta;
    if (next > 0) this.liveByOwner.set(owner, next);
    else this.liveByOwner.delete(owner);
  }

  private indexExpiry(handle: string, expiresAt: number): void {
    this.expiring.add(handle, expiresAt);
  }

  private unindexExpiry(handle: string, expiresAt: number): void {
    this.expiring.remove(handle, expiresAt);
  }

  clear(): void {
    this.records.clear();
    this.byUpstreamId.clear();
    this.byOwner.clear();
    this.polls.clear();
    this.expiring.clear();
    this.liveByOwner.clear();
    this.provided.clear();
    this.leases.clear();
  }
}

const NO_POLLS: PollActivity = { forwarded: 0, early: 0, abusive: 0 };

/**
 * A task's poll state, last snapshot and poll activity, changed in place by each poll (one
 * object per task; the counts cost four numbers more per polled task).
 */
class PollEntry implements PollState {
  lastForwardedAt: number | undefined;
  earlyCount: number;
  snapshot: string | undefined;
  forwarded = 0;
  early = 0;
  abusive = 0;
  lastPollAt: number | undefined = undefined;

  constructor(lastForwardedAt: number | undefined, earlyCount: number, snapshot?: string) {
    this.lastForwardedAt = lastForwardedAt;
    this.earlyCount = earlyCount;
    this.snapshot = snapshot;
  }

  book(verdict: PollVerdict, now: number): void {
    if (verdict === 'forward') this.forwarded++;
    else if (verdict === 'early') this.early++;
    else this.abusive++;
    this.lastPollAt = now;
  }

  /** The clock and the snapshot are forgotten (the next poll is forwarded); the counts stay. */
  reset(): void {
    this.lastForwardedAt = undefined;
    this.earlyCount = 0;
    this.snapshot = undefined;
  }
}

/**
 * The `count` least records of these handles by byExpiry, from those expiring at or after
 * `from`, in order: one pass, keeping a sorted array of at most `count` (n log count).
 */
function leastOf(handles: Iterable<string>, records: ReadonlyMap<string, Readonly<TaskRecord>>, from: number, count: number): TaskRecord[] {
  const least: TaskRecord[] = [];
  if (count <= 0) return least;
  for (const handle of handles) {
    const record = records.get(handle);
    if (!record || record.expiresAt < from) continue;
    if (least.length === count && byExpiry(record, least[count - 1]!) >= 0) continue;
    let low = 0;
    let high = least.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (byExpiry(least[mid]!, record) < 0) low = mid + 1;
      else high = mid;
    }
    least.splice(low, 0, record);
    if (least.length > count) least.pop();
  }
  return least;
}

function upstreamKey(upstream: string, instance: string, upstreamTaskId: string): string {
  return `${upstream}\u0000${instance}\u0000${upstreamTaskId}`;
}
