/** What the parts of the provided-tasks room share on one replica (DESIGN.md §9). */
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { TaskObserver } from '../observability/task-observer.js';
import type { Store } from '../store/store.js';
import type { LegacyStatusPush } from '../push/legacy/legacy-status-push.js';
import type { BackendSupport } from './backend-support.js';

/**
 * A backend call this replica holds for a task (task-driver.ts), or the pause before a task's
 * next call (call-again.ts), seen from the outside.
 */
export interface HeldCall {
  /** Stops the call because its task was cancelled (2025: the backend is told first). */
  cancel(): Promise<void>;
  /** Stops the call and ends its task failed with `message` (shutdown). */
  fail(message: string): Promise<void>;
  /** Settles when the call and its task's last write are done. */
  readonly done: Promise<void>;
  /**
   * Takes back the lease that the lapsed-lease sweep took from this very call (this replica
   * stalled past the lease, but is running the call still). False when the task moved on.
   */
  reclaimLease(): Promise<boolean>;
}

/** Why a task ends failed when the gateway shuts down before its backend answered. */
export const SHUTDOWN_MESSAGE = 'the gateway shut down before the backend answered';

export interface ProvidedContext {
  readonly store: Store;
  readonly logger: Logger;
  readonly observer: TaskObserver;
  readonly metrics: GatewayMetrics;
  /** This replica's name in call leases. */
  readonly replica: string;
  readonly support: BackendSupport;
  /** The calls this replica holds, by task handle. */
  readonly held: Map<string, HeldCall>;
  /** Backend calls in flight here, tasks or not yet (2026 calls before promotion). */
  inFlight: number;
  /** Set once the gateway shuts down: a task's next call is not started then, the task ends failed. */
  closing: boolean;
  /** 2025 status notifications on the sessions' GET streams (src/push/legacy/). */
  readonly legacyPush: LegacyStatusPush;
}
