/**
 * The memory store's expiry index: which handles expire in which second, with the seconds kept
 * in order. Both readers walk it from the front and stop early: the expiry sweep at the first
 * second not yet due, a page of scanLiveTasks as soon as it holds the page. Before the seconds
 * were ordered, the sweep walked every second indexed on each run and a console page sorted
 * every record (docs/benchmarks.md, "Scale": 34 ms per 50-task page at 100,000 tasks).
 *
 * The seconds are a sorted array beside the map, not a tree or a heap: nearly every insert
 * is a task created now with a TTL from the policy, whose second is at or near the end, and
 * nearly every removal is the sweep emptying the first one; a binary search finds the place
 * and the array holds one number per distinct second (at most the longest TTL in seconds,
 * 86,400 for a day), so the occasional shift in the middle moves a few hundred KB at most.
 * No library in the stack keeps an ordered map, and this one is two searches.
 */
export class ExpiryIndex {
  private readonly bySecond = new Map<number, Set<string>>();
  /** The keys of bySecond, ascending. */
  private readonly seconds: number[] = [];

  add(handle: string, expiresAt: number): void {
    const second = secondOf(expiresAt);
    let handles = this.bySecond.get(second);
    if (!handles) {
      handles = new Set<string>();
      this.bySecond.set(second, handles);
      const last = this.seconds.at(-1);
      if (last === undefined || last < second) this.seconds.push(second);
      else this.seconds.splice(firstAtOrAfter(this.seconds, second), 0, second);
    }
    handles.add(handle);
  }

  remove(handle: string, expiresAt: number): void {
    const second = secondOf(expiresAt);
    const handles = this.bySecond.get(second);
    if (!handles) return;
    handles.delete(handle);
    if (handles.size > 0) return;
    this.bySecond.delete(second);
    const at = firstAtOrAfter(this.seconds, second);
    if (at === 0) this.seconds.shift();
    else this.seconds.splice(at, 1);
  }

  /** Each second from the one that holds `fromMs` on, with its handles, in order. */
  *from(fromMs: number): Generator<[second: number, handles: ReadonlySet<string>]> {
    // The array may change while a caller deletes between steps: go on by second, not by index.
    let at = firstAtOrAfter(this.seconds, secondOf(fromMs));
    while (at < this.seconds.length) {
      const second = this.seconds[at]!;
      const handles = this.bySecond.get(second);
      if (handles) yield [second, handles];
      at = firstAtOrAfter(this.seconds, second + 1);
    }
  }

  /** Each second at or before the one that holds `nowMs`, with its handles, oldest first. */
  *due(nowMs: number): Generator<[second: number, handles: ReadonlySet<string>]> {
    const last = secondOf(nowMs);
    for (const entry of this.from(-Infinity)) {
      if (entry[0] > last) return;
      yield entry;
    }
  }

  /** How many distinct seconds are indexed (for tests of the index's bound). */
  get secondsIndexed(): number {
    return this.seconds.length;
  }

  clear(): void {
    this.bySecond.clear();
    this.seconds.length = 0;
  }
}

function secondOf(ms: number): number {
  return Math.floor(ms / 1000);
}

/** The index of the first element ≥ value in an ascending array (its length if none). */
function firstAtOrAfter(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid]! < value) low = mid + 1;
    else high = mid;
  }
  return low;
}
