/**
 * A bounded map whose entries expire (or never do: a TTL of Infinity makes it a bounded memo,
 * oldest out). Hand-written rather than taken from lru-cache because
 * the memory store needs exactly two things, a hard entry cap and per-entry deadlines, and a
 * Map's insertion order already gives oldest-first eviction in a dozen lines.
 */
export class TtlMap<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private readonly maxEntries: number;

  constructor(maxEntries: number) {
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Sets a value; when full, the entry inserted longest ago makes room. */
  set(key: string, value: V, ttlMs: number, now = Date.now()): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expiresAt: now + ttlMs });
  }

  /** Replaces the value of a live entry and keeps its deadline; false when there is none. */
  update(key: string, value: V, now = Date.now()): boolean {
    const entry = this.entries.get(key);
    if (!entry || entry.expiresAt <= now) return false;
    entry.value = value;
    return true;
  }

  /** The keys held, oldest first; expired ones too until a read or a sweep drops them. */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  /** Drops expired entries; called on a timer so idle keys do not linger. */
  sweep(now = Date.now()): number {
    let removed = 0;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) {
        this.entries.delete(key);
        removed++;
      }
    }
    return removed;
  }

  clear(): void {
    this.entries.clear();
  }
}
