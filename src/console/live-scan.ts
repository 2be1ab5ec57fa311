/**
 * What the console reads of the store: every live task, whoever owns it, through the store's
 * bounded, cursor-paged scan (Store.scanLiveTasks) in pages of SCAN_PAGE, up to
 * console.maxScan records. On a shared store that is every replica's tasks. Viewers poll every
 * ~2 s, so a scan younger than FRESH_MS is shared by every request that asks, and one scan
 * runs at a time.
 *
 * The raw handles stay here, on the server: a task leaves the console only under the audit
 * trail's salted hash of its handle (handle-hash.ts), which is also how an action names it.
 */
import type { HandleHasher } from '../observability/handle-hash.js';
import type { LiveTaskCursor, Store } from '../store/store.js';
import type { TaskRecord } from '../task-model/task-record.js';

/** Index entries read per store round trip. */
export const SCAN_PAGE = 500;
/** A scan this young answers the next request too. */
const FRESH_MS = 1000;

export interface LiveTasks {
  /** Epoch ms the scan started. */
  readonly at: number;
  readonly records: readonly TaskRecord[];
  /** More live tasks exist than console.maxScan let the scan read. */
  readonly truncated: boolean;
  /** The record behind a console task id (the handle's hash), among those read. */
  byId(id: string): TaskRecord | undefined;
}

export class LiveScan {
  private latest: LiveTasks | undefined;
  private running: Promise<LiveTasks> | undefined;

  constructor(
    private readonly store: Store,
    private readonly hashHandle: HandleHasher,
    private readonly onScan: (tasks: LiveTasks) => void = () => undefined,
  ) {}

  /** The live tasks as of at most FRESH_MS ago; `fresh` insists on a scan begun now. */
  async read(maxScan: number, fresh = false): Promise<LiveTasks> {
    const now = Date.now();
    if (!fresh && this.latest && now - this.latest.at < FRESH_MS) return this.latest;
    if (this.running) {
      const running = await this.running;
      if (!fresh || running.at >= now) return running;
    }
    this.running = this.scan(maxScan, now).finally(() => (this.running = undefined));
    return this.running;
  }

  /** The last scan's age, for the sampler: undefined before the first one. */
  get lastAt(): number | undefined {
    return this.latest?.at;
  }

  private async scan(maxScan: number, now: number): Promise<LiveTasks> {
    const records: TaskRecord[] = [];
    let after: LiveTaskCursor | undefined;
    let truncated = false;
    for (;;) {
      const page = await this.store.scanLiveTasks(after, Math.min(SCAN_PAGE, maxScan - records.length), now);
      records.push(...page.records);
      if (!page.next) break;
      if (records.length >= maxScan) {
        truncated = true;
        break;
      }
      after = page.next;
    }
    const hashes = new Map<string, TaskRecord>();
    const hashHandle = this.hashHandle;
    const tasks: LiveTasks = {
      at: now,
      records,
      truncated,
      byId(id) {
        // Built on the first lookup only: most reads list, few act.
        if (hashes.size === 0) for (const record of records) hashes.set(hashHandle(record.handle), record);
        return hashes.get(id);
      },
    };
    this.latest = tasks;
    this.onScan(tasks);
    return tasks;
  }
}
