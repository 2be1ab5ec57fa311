/** What the tasks stage's phases share: its dependencies, policy, and the answers it makes. */
import type { Logger } from 'pino';
import type { TasksConfig } from '../config/sections/tasks.js';
import type { Store } from '../store/store.js';
import type { UpstreamCaller } from './upstream-call.js';

export interface TaskDeps {
  readonly store: Store;
  readonly policy: TasksConfig;
  /** Whether principals are verified; 2025 tasks/list is only served (and advertised) then. */
  readonly authEnabled: boolean;
  readonly logger: Logger;
  readonly callUpstream: UpstreamCaller;
}

/** An answer the gateway gives by itself instead of forwarding. */
export interface LocalAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Record<string, string>;
}

/** Principal key of requests on a gateway running without authentication. */
export const ANONYMOUS_OWNER = 'anonymous';

/** Lifetime of the route kept for a relayed server→client request awaiting its answer. */
export const SERVER_REQUEST_TTL_MS = 60 * 60 * 1000;
