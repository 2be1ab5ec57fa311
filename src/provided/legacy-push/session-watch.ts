/**
 * One 2025-11-25 client session's status push (docs/provided-tasks.md, "Status push"): the
 * provided tasks its owner created in it, watched through the store's task announcements, and
 * the session's open standalone GET streams, the newest of which gets each
 * `notifications/tasks/status`. Never another principal's or another session's: the tasks are
 * found by the owner's own task list and each is checked against the session when read.
 */
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../../observability/metrics.js';
import type { Store } from '../../store/store.js';
import { isTerminalStatus, type TaskRecord, type TaskStatus } from '../../task-model/task-record.js';
import { taskFromRecord, wireOf } from '../../task-model/task-wire.js';
import type { SessionOutput } from './session-output.js';

/** Tasks one session watches at once; past it, newer tasks of the session are not pushed (polls still work). */
export const MAX_WATCHED_TASKS = 256;
/** Handles a session remembers having found, so a rediscovered task is not taken up twice. */
const MAX_REMEMBERED = 1024;
/** How many of the owner's newest tasks on the upstream a discovery reads. */
const DISCOVERY_PAGE = 100;

export interface SessionKey {
  readonly owner: string;
  readonly upstream: string;
  readonly session: string;
}

export interface WatchDeps {
  readonly store: Store;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}

interface Watched {
  /** The status the client was last told (by the creation result, a poll, or this push). */
  told: TaskStatus;
  expiresAt: number;
  unsubscribe: () => void;
  reading: boolean;
  again: boolean;
}

export class SessionWatch {
  readonly #deps: WatchDeps;
  readonly #key: SessionKey;
  readonly #watched = new Map<string, Watched>();
  readonly #found = new Set<string>();
  /** Open GET streams of the session, oldest first; the last one is written to. */
  readonly #outputs: SessionOutput[] = [];
  readonly #unsubscribeSession: () => void;
  #discovering = false;
  #discoverAgain = false;
  #closed = false;

  /** `announcements` is the key the session's task creations are announced under. */
  constructor(deps: WatchDeps, key: SessionKey, announcements: string) {
    this.#deps = deps;
    this.#key = key;
    // Called on every creation announced in the session, and after missed announcements.
    this.#unsubscribeSession = deps.store.events.subscribe(announcements, () => void this.#discover(false));
    void this.#discover(true);
  }

  get empty(): boolean {
    return this.#outputs.length === 0;
  }

  add(output: SessionOutput): void {
    this.#outputs.push(output);
  }

  /** Removes a closed stream; true when none is left (the caller then closes the watch). */
  remove(output: SessionOutput): boolean {
    const at = this.#outputs.indexOf(output);
    if (at >= 0) this.#outputs.splice(at, 1);
    return this.#outputs.length === 0;
  }

  close(): void {
    this.#closed = true;
    this.#unsubscribeSession();
    for (const watched of this.#watched.values()) watched.unsubscribe();
    this.#watched.clear();
  }

  /**
   * Reads the owner's newest tasks on the upstream and takes up the session's provided ones it
   * has not found yet. The first discovery (the stream opening) skips tasks already ended: the
   * client polled those or will; a later one takes them too, as a task may end before its
   * creation's announcement is heard.
   */
  async #discover(initial: boolean): Promise<void> {
    if (this.#discovering) {
      this.#discoverAgain = true;
      return;
    }
    this.#discovering = true;
    try {
      do {
        this.#discoverAgain = false;
        const { owner, upstream } = this.#key;
        const tasks = await this.#deps.store.listTasks({ owner, era: 'legacy', upstream }, undefined, DISCOVERY_PAGE);
        if (this.#closed) return;
        this.#forgetExpired();
        for (const record of tasks) {
          if (!this.#inSession(record) || this.#found.has(record.handle)) continue;
          this.#remember(record.handle);
          if (initial && isTerminalStatus(record.status)) continue;
          this.#watch(record.handle, record.expiresAt);
        }
        initial = false;
      } while (this.#discoverAgain && !this.#closed);
    } catch (error) {
      // The store is away: the announcement after its return (or the next creation) discovers again.
      this.#deps.logger.warn({ err: error, upstream: this.#key.upstream }, 'status push: could not list a session\'s tasks');
    } finally {
      this.#discovering = false;
    }
  }

  #inSession(record: TaskRecord): boolean {
    const { owner, upstream, session } = this.#key;
    // A background call's client knows no tasks (src/background/): nothing is pushed for it.
    if (record.backgroundCall !== undefined) return false;
    return record.kind === 'provided' && wireOf(record.era).sessions && record.owner === owner && record.upstream === upstream && record.upstreamSession === session;
  }

  #remember(handle: string): void {
    if (this.#found.size >= MAX_REMEMBERED) this.#found.delete(this.#found.values().next().value as string);
    this.#found.add(handle);
  }

  #watch(handle: string, expiresAt: number): void {
    if (this.#watched.size >= MAX_WATCHED_TASKS) {
      this.#deps.logger.info({ upstream: this.#key.upstream, max: MAX_WATCHED_TASKS }, 'status push: a session watches as many tasks as it may; a newer one is not pushed');
      return;
    }
    // Every created task starts `working`: its CreateTaskResult said so.
    const watched: Watched = { told: 'working', expiresAt, unsubscribe: () => undefined, reading: false, again: false };
    watched.unsubscribe = this.#deps.store.events.subscribe(handle, () => void this.#check(handle, watched));
    this.#watched.set(handle, watched);
    void this.#check(handle, watched);
  }

  #unwatch(handle: string, watched: Watched): void {
    watched.unsubscribe();
    if (this.#watched.get(handle) === watched) this.#watched.delete(handle);
  }

  /** Tasks past their lifetime are gone from the store, and no announcement will say so. */
  #forgetExpired(): void {
    const now = Date.now();
    for (const [handle, watched] of this.#watched) if (watched.expiresAt <= now) this.#unwatch(handle, watched);
  }

  /** Reads the task (one read at a time per task) and pushes its status if it moved. */
  async #check(handle: string, watched: Watched): Promise<void> {
    if (watched.reading) {
      watched.again = true;
      return;
    }
    watched.reading = true;
    try {
      do {
        watched.again = false;
        const record = await this.#deps.store.getTask(handle);
        if (this.#closed || this.#watched.get(handle) !== watched) return;
        if (!record || !this.#inSession(record)) return this.#unwatch(handle, watched);
        watched.expiresAt = record.expiresAt;
        if (record.status !== watched.told) {
          watched.told = record.status;
          this.#send(record);
        }
        if (isTerminalStatus(record.status)) return this.#unwatch(handle, watched);
      } while (watched.again);
    } catch (error) {
      // The store is away: the announcements after its return read the task again.
      this.#deps.logger.warn({ err: error, upstream: this.#key.upstream }, 'status push: could not read a watched task');
    } finally {
      watched.reading = false;
    }
  }

  /** The Task exactly as this gateway's legacy tasks/get answers it; no related-task _meta. */
  #send(record: TaskRecord): void {
    const output = this.#outputs.at(-1);
    const message = { jsonrpc: '2.0', method: 'notifications/tasks/status', params: taskFromRecord(record) };
    const outcome = output?.write(message) ? 'delivered' : 'dropped';
    this.#deps.metrics.legacyStatusNotifications.inc({ outcome });
  }
}
