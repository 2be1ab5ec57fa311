/** What the parts of the provided-tasks room share on one replica (DESIGN.md §9). */
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { TaskObserver } from '../observability/task-observer.js';
import type { Store } from '../store/store.js';
import type { LegacyStatusPush } from './legacy-push/legacy-status-push.js';
import type { BackendSupport } from './backend-support.js';
import type { HeldCall } from './held-call.js';

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
  /** Backend calls in flight here, tasks or not yet (modern calls before promotion). */
  inFlight: number;
  /** Set once the gateway shuts down: a task's next call is not started then, the task ends failed. */
  closing: boolean;
  /** Legacy status notifications on the sessions' GET streams (src/provided/legacy-push/). */
  readonly legacyPush: LegacyStatusPush;
}
