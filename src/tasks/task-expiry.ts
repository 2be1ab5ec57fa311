/**
 * When a task's lifetime ends the gateway forgets it (not found from then on) and, if the task
 * was not terminal, asks its backend to cancel it (or, for a task the gateway runs itself,
 * stops its call), so nothing keeps running for a client that can no longer reach it.
 */
import { taskKindHandler, type TaskDeps } from './task-context.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';

const BATCH = 200;

export class TaskExpirySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  /** The task deps of the policy in force (read at each sweep: the policy may change). */
  private readonly depsNow: () => TaskDeps;
  private readonly onExpired: (record: TaskRecord) => void;
  /** Whether the last sweep failed: an outage is logged when it starts, not every second. */
  private failing = false;

  constructor(depsNow: () => TaskDeps, onExpired: (record: TaskRecord) => void = () => undefined) {
    this.depsNow = depsNow;
    this.onExpired = onExpired;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      // One sweep at a time: a slow store must not stack sweeps up.
      this.running ??= this.sweep().finally(() => (this.running = undefined));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /**
   * Forgets every task whose lifetime has ended, and gives each registered task kind its
   * upkeep (gateway-run tasks whose call's replica stopped end there); returns how many tasks
   * were forgotten.
   */
  async sweep(now = Date.now()): Promise<number> {
    const deps = this.depsNow();
    let total = 0;
    try {
      total = await this.forgetExpired(deps, now);
      for (const kind of deps.extensions.taskKinds) await kind.sweep(deps, now);
    } catch (error) {
      if (!this.failing) deps.logger.warn({ err: error }, 'task expiry sweeps cannot reach the store; retrying every sweep');
      this.failing = true;
      return total;
    }
    if (this.failing) deps.logger.info('task expiry sweeps reach the store again');
    this.failing = false;
    return total;
  }

  private async forgetExpired(deps: TaskDeps, now: number): Promise<number> {
    let total = 0;
    for (;;) {
      const expired = await deps.store.takeExpiredTasks(now, BATCH);
      for (const record of expired) {
        this.onExpired(record);
        const handler = taskKindHandler(deps, record);
        if (handler) {
          handler.expired(record);
        } else if (!isTerminalStatus(record.status)) {
          // The policy in force now, not at the start of the sweep: a reload may have replaced
          // that one meanwhile, and its agents close once nothing runs on them.
          this.depsNow().callUpstream(record, 'tasks/cancel', { reason: 'expired' }).catch((error: unknown) => {
            deps.logger.warn({ err: error, upstream: record.upstream }, 'could not cancel an expired task upstream');
          });
        }
      }
      total += expired.length;
      if (expired.length < BATCH) return total;
    }
  }
}
