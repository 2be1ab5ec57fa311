/**
 * One listener's task notifications: for each handle it was granted, the task's changes as
 * TaskEvents announce them (from any replica), read from the store and sent when what tasks/get
 * would answer differs from what was sent last. TaskEvents also calls after a possible miss
 * (a Redis reconnect): the same read then sends the current state of every task once, if it
 * changed. Reads of one task run one at a time; a burst of announcements queues one more.
 * While the listener is still taking an earlier message, a change is not rendered into the
 * stream's queue: the task is read again once the stream is writable, so a burst of large
 * results never piles up in memory and the listener gets each task's latest state.
 */
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { Store } from '../store/store.js';
import type { ListenerStream } from './listener-stream.js';
import { hasEnded, readTaskView } from './task-view.js';

interface Followed {
  lastSent?: string;
  ended: boolean;
  reading: boolean;
  again: boolean;
  /** Waiting for the listener's stream to take a message (ListenerStream.whenWritable). */
  deferred: boolean;
  unsubscribe: () => void;
}

export interface TaskSubscriptionDeps {
  readonly store: Store;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
}

export class TaskSubscription {
  private readonly followed = new Map<string, Followed>();
  private readonly deps: TaskSubscriptionDeps;
  private readonly stream: ListenerStream;
  /** Called once every task has ended (or is gone). */
  private readonly onAllEnded: () => void;
  private stopped = false;

  constructor(deps: TaskSubscriptionDeps, stream: ListenerStream, handles: readonly string[], onAllEnded: () => void) {
    this.deps = deps;
    this.stream = stream;
    this.onAllEnded = onAllEnded;
    for (const handle of handles) {
      const entry: Followed = { ended: false, reading: false, again: false, deferred: false, unsubscribe: () => undefined };
      this.followed.set(handle, entry);
      entry.unsubscribe = deps.store.events.subscribe(handle, () => this.read(handle, entry, false));
    }
  }

  /** Whether every task has ended (or is gone). */
  get allEnded(): boolean {
    return [...this.followed.values()].every((entry) => entry.ended);
  }

  /** Sends every task's current state once (right after the acknowledgement). */
  start(): void {
    for (const [handle, entry] of this.followed) this.read(handle, entry, true);
    if (this.followed.size === 0) this.onAllEnded();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const entry of this.followed.values()) entry.unsubscribe();
  }

  private read(handle: string, entry: Followed, initial: boolean): void {
    if (this.stopped || entry.ended) return;
    if (entry.reading) {
      entry.again = true;
      return;
    }
    entry.reading = true;
    this.send(handle, entry, initial)
      .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'a listened-to task could not be read; its next change reads it again'))
      .finally(() => {
        entry.reading = false;
        if (entry.again) {
          entry.again = false;
          this.read(handle, entry, false);
        }
      });
  }

  private async send(handle: string, entry: Followed, initial: boolean): Promise<void> {
    const view = await readTaskView(this.deps.store, handle);
    if (this.stopped) return;
    if (!view) {
      // Expired (or forgotten once read) while listened to: nothing more will come of it.
      this.markEnded(entry);
      return;
    }
    if (!view.task) return;
    const text = JSON.stringify(view.task);
    if (text !== entry.lastSent) {
      if (this.stream.congested) {
        // Not queued behind what the listener is still taking: read again once it took that,
        // and send the state then current. Not ended meanwhile: this state was not sent.
        this.defer(handle, entry, initial);
        return;
      }
      entry.lastSent = text;
      if (this.stream.notify('notifications/tasks', view.task)) {
        this.deps.metrics.pushNotifications.inc({ outcome: 'delivered', reason: 'none' });
        // The first state sent is the state at subscription time, not a change seen now.
        if (!initial) this.observeLag(view.record.lastUpdatedAtIso);
      }
    }
    if (hasEnded(view)) this.markEnded(entry);
  }

  private defer(handle: string, entry: Followed, initial: boolean): void {
    if (entry.deferred) return;
    entry.deferred = true;
    this.stream.whenWritable(() => {
      entry.deferred = false;
      this.read(handle, entry, initial);
    });
  }

  private markEnded(entry: Followed): void {
    if (entry.ended) return;
    entry.ended = true;
    entry.unsubscribe();
    if (this.allEnded) this.onAllEnded();
  }

  private observeLag(lastUpdatedAtIso: string): void {
    const changedAt = Date.parse(lastUpdatedAtIso);
    if (Number.isFinite(changedAt)) this.deps.metrics.pushDeliveryLag.observe(Math.max(0, Date.now() - changedAt) / 1000);
  }
}
