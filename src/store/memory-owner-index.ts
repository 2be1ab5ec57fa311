/**
 * The memory store's owner index: each owner's task handles in tasks/list's order, so that a
 * page of tasks/list reads from its cursor on instead of sorting the owner's tasks per page
 * (docs/benchmarks.md, "Scale"). The handles are kept oldest first, the reverse of the list's
 * order, so that a new task, nearly always the newest, is appended; a page reads backwards.
 *
 * An array per owner rather than a tree: appends and the sweep's removal of the oldest (a
 * shift, which V8 does by trimming the array's front) are the common writes, and an owner holds
 * at most `tasks.createRate` over the longest TTL (7,200 at the defaults), so the occasional
 * splice in the middle moves a few thousand pointers at most.
 */
import type { TaskListPosition } from './store.js';

export class OwnerIndex {
  private readonly byOwner = new Map<string, string[]>();
  /** A handle's position; every handle in the index has one (the table keeps both in step). */
  private readonly positionOf: (handle: string) => TaskListPosition;

  constructor(positionOf: (handle: string) => TaskListPosition) {
    this.positionOf = positionOf;
  }

  add(owner: string, task: TaskListPosition): void {
    const owned = this.byOwner.get(owner);
    if (!owned) {
      this.byOwner.set(owner, [task.handle]);
      return;
    }
    if (newestFirst(task, this.positionOf(owned.at(-1)!)) < 0) owned.push(task.handle);
    else owned.splice(this.olderThan(owned, task), 0, task.handle);
  }

  /** Called while the task's position can still be read (before its record is dropped). */
  remove(owner: string, task: TaskListPosition): void {
    const owned = this.byOwner.get(owner);
    if (!owned) return;
    const found = this.olderThan(owned, task);
    const at = owned[found] === task.handle ? found : owned.indexOf(task.handle);
    if (at === 0) owned.shift();
    else if (at > 0) owned.splice(at, 1);
    if (owned.length === 0) this.byOwner.delete(owner);
  }

  /** The owner's handles newest first, from just after `after` (from the newest without one). */
  *newestFirst(owner: string, after: TaskListPosition | undefined): Generator<string> {
    const owned = this.byOwner.get(owner);
    if (!owned) return;
    for (let i = after ? this.olderThan(owned, after) - 1 : owned.length - 1; i >= 0; i--) yield owned[i]!;
  }

  handlesOf(owner: string): readonly string[] {
    return this.byOwner.get(owner) ?? [];
  }

  clear(): void {
    this.byOwner.clear();
  }

  /**
   * How many of the owner's handles (oldest first) come after the position in tasks/list's
   * order: the index of the first that is the position itself or newer.
   */
  private olderThan(owned: readonly string[], position: TaskListPosition): number {
    let low = 0;
    let high = owned.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (newestFirst(this.positionOf(owned[mid]!), position) > 0) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** Newest first; the handle breaks ties so the order (and so the cursor) is total. */
function newestFirst(a: TaskListPosition, b: TaskListPosition): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  return a.handle < b.handle ? -1 : a.handle > b.handle ? 1 : 0;
}
