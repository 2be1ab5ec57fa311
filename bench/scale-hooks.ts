/**
 * The gateway child's side of the scale curves (bench/scale-store.ts), run inside taskgate's
 * own process over IPC: putting many live tasks in place quickly, and timing two reads whose
 * cost depends on how many tasks there are.
 *
 * Seeding copies templates: real records, one per principal and poll kind, that the gateway
 * built itself (registerCreatedTask) from tasks created through it over HTTP just before. Each
 * seeded record is such a template with the fields that differ per task made anew as a
 * creation makes them (a handle from the gateway's own mintHandle, a backend id, both ISO
 * timestamps, createdAt and expiresAt), and it is stored by the store's own createTask, which
 * copies and indexes it as it does every task. So a seeded task costs the heap (or the Redis
 * memory) a created one does; the harness checks that by measuring both (heap per seeded and
 * per created task).
 */
import type { ChildHook } from './child-channel.js';
import type { Store } from '../src/store/store.js';
import type { TaskRecord } from '../src/task-model/task-record.js';

/** The two kinds of task polled: interval 0 (polls forwarded) and one hour (early polls cached). */
export type PollKind = 'fast' | 'slow';
export const POLL_KINDS: readonly PollKind[] = ['fast', 'slow'];

/** A task the harness may poll: its handle and the index of its owner's token. */
export interface SampledTask {
  handle: string;
  principal: number;
}

/** The templates: per kind, the handle of principal i's task at index i. */
export type SeedTemplates = Record<PollKind, string[]>;

export interface SeedChunk {
  /** Tasks to add in this call; kinds alternate and principals rotate, as the harness's creations do. */
  count: number;
  /** Tasks per kind kept as a uniform sample of everything seeded (reservoir sampling). */
  sample: number;
}

export interface SeedOutcome {
  seeded: number;
  /** Creations the store refused, by outcome (owner-limit, full): 0 unless the policy is wrong. */
  refused: Record<string, number>;
  seconds: number;
}

export interface SeededSample {
  tasks: Record<PollKind, SampledTask[]>;
  /** Tasks seeded of each kind: the sample is drawn uniformly from them. */
  seeded: Record<PollKind, number>;
}

/** How long one page of the reads that scan tasks takes at this size. */
export interface ReadTimes {
  /** scanLiveTasks, 50 tasks: one page of the operator console's task view (the quickest of up to three). */
  scanPageMs: number;
  /** listTasks, 50 tasks of one principal: one page of tasks/list. */
  listPageMs: number;
  /** Tasks that principal holds. */
  listOwnerTasks: number;
}

/** Store writes in flight while seeding: one at a time is as fast as it gets on memory; Redis wants a pipeline. */
const IN_FLIGHT = { memory: 1, redis: 64 } as const;
/** The event loop gets a turn this often, so IPC and the gateway's timers are not held up. */
const YIELD_EVERY = 2000;

class Seeder {
  private templates: Record<PollKind, TaskRecord[]> = { fast: [], slow: [] };
  private next = 0;
  private sample: SeededSample = { tasks: { fast: [], slow: [] }, seeded: { fast: 0, slow: 0 } };

  constructor(private readonly store: Store, private readonly mintHandle: () => string, private readonly maxLivePerOwner: number) {}

  async useTemplates(handles: SeedTemplates): Promise<number> {
    for (const kind of POLL_KINDS) {
      this.templates[kind] = await Promise.all(
        handles[kind].map(async (handle) => {
          const record = await this.store.getTask(handle);
          if (!record) throw new Error(`template task ${handle} is not in the store`);
          return record;
        }),
      );
    }
    return this.templates.fast.length;
  }

  async seed(chunk: SeedChunk): Promise<SeedOutcome> {
    const principals = this.templates.fast.length;
    if (principals === 0 || this.templates.slow.length !== principals) throw new Error('seeding needs a fast and a slow template per principal first');
    const started = performance.now();
    const refused: Record<string, number> = {};
    const end = this.next + chunk.count;
    const worker = async () => {
      for (let index = this.next++; index < end; index = this.next++) {
        const kind: PollKind = index % 2 === 0 ? 'fast' : 'slow';
        const principal = Math.floor(index / 2) % principals;
        const record = this.recordLike(this.templates[kind][principal]!, kind, index);
        const outcome = await this.store.createTask(record, this.maxLivePerOwner);
        if (outcome === 'created') this.keep(kind, { handle: record.handle, principal }, chunk.sample);
        else refused[outcome] = (refused[outcome] ?? 0) + 1;
        if (index % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT[this.store.kind] }, worker));
    this.next = end;
    const failed = Object.values(refused).reduce((a, b) => a + b, 0);
    return { seeded: chunk.count - failed, refused, seconds: (performance.now() - started) / 1000 };
  }

  /** The sample so far, handed over once: the child keeps no reference to it afterwards. */
  takeSample(): SeededSample {
    const sample = this.sample;
    this.sample = { tasks: { fast: [], slow: [] }, seeded: { fast: 0, slow: 0 } };
    return sample;
  }

  /**
   * The template with what a creation makes anew per task. The backend id is of the kind's
   * shape (the bench backend answers a `slow-` id with a one hour interval), unique, and never
   * one the backend hands out (those are `fast-<n>`, `slow-<n>`).
   */
  private recordLike(template: TaskRecord, kind: PollKind, index: number): TaskRecord {
    const now = Date.now();
    return {
      ...template,
      handle: this.mintHandle(),
      upstreamTaskId: `${kind}-s${index}`,
      createdAt: now,
      createdAtIso: new Date(now).toISOString(),
      lastUpdatedAtIso: new Date(now).toISOString(),
      expiresAt: now + template.ttlMs,
    };
  }

  private keep(kind: PollKind, task: SampledTask, size: number): void {
    const seen = ++this.sample.seeded[kind];
    const kept = this.sample.tasks[kind];
    if (kept.length < size) kept.push(task);
    else {
      const slot = Math.floor(Math.random() * seen);
      if (slot < size) kept[slot] = task;
    }
  }

  /** One page of each read that walks tasks, timed (quickest: the machine is shared); the owner is the first principal's. */
  async timeReads(): Promise<ReadTimes> {
    const template = this.templates.fast[0];
    if (!template) throw new Error('no template: seed first');
    const scope = { owner: template.owner, era: template.era, upstream: template.upstream };
    const scanPageMs = await quickest(() => this.store.scanLiveTasks(undefined, 50, Date.now()));
    const listPageMs = await quickest(() => this.store.listTasks(scope, undefined, 50));
    // How many that principal holds: a walk of its pages (not timed).
    let listOwnerTasks = 0;
    for (let page = await this.store.listTasks(scope, undefined, 1000); page.length > 0; ) {
      listOwnerTasks += page.length;
      const last = page[page.length - 1]!;
      page = await this.store.listTasks(scope, { createdAt: last.createdAt, handle: last.handle }, 1000);
    }
    return { scanPageMs, listPageMs, listOwnerTasks };
  }
}

/**
 * The quickest of three runs of `read`, in ms; one run when it takes a second or more (a console
 * page of a million tasks does), so the harness's IPC answer limit is never reached.
 */
async function quickest(read: () => Promise<unknown>): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    await read();
    best = Math.min(best, performance.now() - started);
    if (best >= 1000) break;
  }
  return best;
}

/** The hooks taskgate's bench child answers (bench/taskgate-child.ts). */
export function scaleHooks(store: Store, mintHandle: () => string, maxLivePerOwner: number): Record<string, ChildHook> {
  const seeder = new Seeder(store, mintHandle, maxLivePerOwner);
  return {
    'scale:templates': (args) => seeder.useTemplates(args as SeedTemplates),
    'scale:seed': (args) => seeder.seed(args as SeedChunk),
    'scale:sample': async () => seeder.takeSample(),
    'scale:reads': () => seeder.timeReads(),
  };
}
