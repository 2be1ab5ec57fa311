/**
 * The position arithmetic of scanLiveTasks (store.ts), shared by both stores so that they page
 * alike: entries are ordered by expiresAt, then handle, and a cursor counts the entries at its
 * expiresAt already read instead of naming the last one (a cursor never carries a handle).
 */
import type { LiveTaskCursor } from './store.js';

/**
 * Where the page after one that read the index entries with these expiresAt values (in order)
 * starts; undefined when the page came up short, which means the index ended.
 */
export function nextLiveTaskCursor(after: LiveTaskCursor | undefined, expiries: readonly number[], limit: number): LiveTaskCursor | undefined {
  if (expiries.length < limit || expiries.length === 0) return undefined;
  const last = expiries.at(-1)!;
  let atLast = 0;
  for (let i = expiries.length - 1; i >= 0 && expiries[i] === last; i--) atLast++;
  // A page wholly at the cursor's own expiresAt moves on past the entries skipped before it.
  const carried = after !== undefined && after.expiresAt === last && atLast === expiries.length ? after.skip : 0;
  return { expiresAt: last, skip: carried + atLast };
}

/** The order of the scan: expiresAt, then handle (as Redis orders equal scores: by bytes). */
export function byExpiry(a: { expiresAt: number; handle: string }, b: { expiresAt: number; handle: string }): number {
  if (a.expiresAt !== b.expiresAt) return a.expiresAt - b.expiresAt;
  return a.handle < b.handle ? -1 : a.handle > b.handle ? 1 : 0;
}
