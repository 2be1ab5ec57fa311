/**
 * Backend tasks that someone listens to, on a backend that does not push their status: the
 * gateway polls tasks/get itself, at the task's own interval, once per task on this replica
 * however many listeners it has, and across replicas at most once per interval window (a
 * fixed-window count in the store, one round trip: the replica that counts first polls, the
 * others skip and hear of a change through TaskEvents). Each answer is rewritten as the owner
 * would be shown it and stored as the task's poll snapshot, so early polls of the client are
 * served from it (the backend sees only these governed polls); a change is announced to every
 * replica's listeners.
 */
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { Store } from '../store/store.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import { presentPolledAnswer } from '../task-model/poll-answer.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import { taskKindHandler, type TaskDeps } from '../tasks/task-context.js';
import { rpcAnswerOf } from '../mcp/event-stream.js';
import { timerDelay } from '../lifecycle/timer-delay.js';

/** No poll comes sooner than this after the last, whatever interval a task says. */
const MIN_POLL_MS = 100;
/** After a failed poll, the next waits at least this long. */
const RETRY_MS = 2000;

export interface BackendPollerDeps {
  readonly store: Store;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  /** The tasks stage of the policy in force (its upstream calls and poll policy). */
  readonly currentTasks: () => TaskDeps | undefined;
}

interface Watched {
  record: TaskRecord;
  listeners: number;
  /** Set while the backend pushes this task's status itself (upstream-push.ts): no polls then. */
  pushed: boolean;
  timer?: NodeJS.Timeout;
  polling: boolean;
  lastSnapshot?: string;
}

export class BackendPoller {
  private readonly deps: BackendPollerDeps;
  private readonly watched = new Map<string, Watched>();
  private closed = false;

  constructor(deps: BackendPollerDeps) {
    this.deps = deps;
  }

  /** Tasks watched on this replica now. */
  get size(): number {
    return this.watched.size;
  }

  /** One more listener for a backend task; the first starts its polls (the first one now) and gets true. */
  acquire(record: TaskRecord): boolean {
    const known = this.watched.get(record.handle);
    if (known) {
      known.listeners++;
      return false;
    }
    const watched: Watched = { record, listeners: 1, pushed: false, polling: false };
    this.watched.set(record.handle, watched);
    if (!isTerminalStatus(record.status)) this.schedule(watched, 0);
    return true;
  }

  /** One listener less; the last one stops the polls and gets true. */
  release(handle: string): boolean {
    const watched = this.watched.get(handle);
    if (!watched || --watched.listeners > 0) return false;
    clearTimeout(watched.timer);
    this.watched.delete(handle);
    return true;
  }

  /** Whether a watched task has ended (nothing more to hear of it). */
  hasEnded(handle: string): boolean {
    const watched = this.watched.get(handle);
    return !watched || isTerminalStatus(watched.record.status);
  }

  /** The backend pushes this task's status (true), or stopped doing so (false: polls resume). */
  setPushed(handle: string, pushed: boolean): void {
    const watched = this.watched.get(handle);
    if (!watched || watched.pushed === pushed) return;
    watched.pushed = pushed;
    if (pushed) clearTimeout(watched.timer);
    else if (!isTerminalStatus(watched.record.status)) this.schedule(watched, 0);
  }

  /**
   * A tasks/get answer (or a backend's notifications/tasks params) for a watched task: stored
   * as its poll snapshot and announced when it changed. False when it is not a task answer.
   */
  async learn(handle: string, result: JsonObject): Promise<boolean> {
    const watched = this.watched.get(handle);
    const tasks = this.deps.currentTasks();
    if (!watched || !tasks) return false;
    const presented = presentPolledAnswer(tasks.policy, watched.record, result);
    if (!presented) return false;
    const snapshot = JSON.stringify(result);
    const before = watched.record;
    watched.record = presented.updated;
    if (snapshot === watched.lastSnapshot) {
      this.deps.metrics.pushUpstreamPolls.inc({ outcome: 'unchanged' });
      return true;
    }
    watched.lastSnapshot = snapshot;
    await this.deps.store.recordPoll(before, presented.patch, snapshot);
    await this.deps.store.events.publish(handle);
    if (before.status !== presented.updated.status) tasks.observer.statusChanged(before, before.status, presented.updated.status);
    this.deps.metrics.pushUpstreamPolls.inc({ outcome: 'changed' });
    return true;
  }

  close(): void {
    this.closed = true;
    for (const watched of this.watched.values()) clearTimeout(watched.timer);
    this.watched.clear();
  }

  private schedule(watched: Watched, delayMs: number): void {
    if (this.closed || watched.pushed) return;
    clearTimeout(watched.timer);
    // The interval is the backend's: a huge one must not overflow into a 1 ms timer.
    watched.timer = setTimeout(() => void this.poll(watched), timerDelay(delayMs));
    watched.timer.unref();
  }

  private async poll(watched: Watched): Promise<void> {
    if (watched.polling || this.watched.get(watched.record.handle) !== watched) return;
    watched.polling = true;
    let next = Math.max(watched.record.pollIntervalMs, MIN_POLL_MS);
    try {
      next = await this.pollOnce(watched, next);
    } catch (error) {
      this.deps.metrics.pushUpstreamPolls.inc({ outcome: 'failed' });
      this.deps.logger.warn({ err: error, upstream: watched.record.upstream }, 'a listened-to task could not be polled; trying again');
      next = Math.max(next, RETRY_MS);
    } finally {
      watched.polling = false;
    }
    if (this.watched.get(watched.record.handle) === watched && !isTerminalStatus(watched.record.status)) this.schedule(watched, next);
  }

  /** One poll, unless another replica polled in this window; the delay until the next. */
  private async pollOnce(watched: Watched, intervalMs: number): Promise<number> {
    const tasks = this.deps.currentTasks();
    if (!tasks) return intervalMs;
    const now = Date.now();
    const { count, resetAt } = await this.deps.store.countInWindow(`push-poll:${watched.record.handle}`, intervalMs, now);
    if (count > 1) {
      this.deps.metrics.pushUpstreamPolls.inc({ outcome: 'skipped' });
      return Math.max(resetAt - now, MIN_POLL_MS);
    }
    // A kind that asks its backend itself (a bridged task's backend speaks the other generation).
    const handler = watched.record.kind === 'backend' ? undefined : taskKindHandler(tasks, watched.record);
    if (handler?.refresh) {
      const before = watched.record;
      watched.record = await handler.refresh(tasks, before);
      this.deps.metrics.pushUpstreamPolls.inc({ outcome: watched.record === before ? 'unchanged' : 'changed' });
      return Math.max(watched.record.pollIntervalMs, MIN_POLL_MS);
    }
    const answer = await tasks.callUpstream(watched.record, 'tasks/get', { reason: 'push' });
    const message = rpcAnswerOf(answer.body, answer.contentType);
    if (!message || !isObject(message.result) || !(await this.learn(watched.record.handle, message.result))) {
      throw new Error(`the backend answered tasks/get with HTTP ${answer.status} and no task`);
    }
    return Math.max(watched.record.pollIntervalMs, MIN_POLL_MS);
  }
}
