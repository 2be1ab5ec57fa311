/**
 * What the console's parts share: what it reads of the gateway (ConsoleDeps, given by
 * gateway.ts), and what the API's handlers are given (ConsoleApiHost, the OperatorConsole).
 */
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import type { AuditLog } from '../observability/audit.js';
import type { HandleHasher } from '../observability/handle-hash.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { InstancePool } from '../routing/balancer.js';
import type { Store } from '../store/store.js';
import type { TaskDeps } from '../tasks/task-context.js';
import type { AuditTimeline } from './audit-timeline.js';
import type { ConsoleSamples } from './console-samples.js';
import type { LiveScan } from './live-scan.js';
import type { Operator } from './operator-auth.js';

/** What the console reads of the policy in force (a PolicySnapshot is one). */
export interface ConsolePolicy {
  readonly config: Config;
  readonly tasks: TaskDeps;
  readonly pools: ReadonlyMap<string, InstancePool>;
  readonly agents: ReadonlyMap<string, { readonly stats: Record<string, unknown> }>;
}

/** One reload as this replica remembers it (src/reload/policy-reloader.ts). */
export interface ReloadEntry {
  readonly at: number;
  readonly outcome: string;
  readonly source: string;
  readonly hash: string;
  readonly changed: readonly string[];
  readonly problems: readonly string[];
}

export interface ConsoleDeps {
  readonly currentPolicy: () => ConsolePolicy;
  readonly store: Store;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  readonly audit: AuditLog;
  readonly hashHandle: HandleHasher;
  readonly timeline: AuditTimeline;
  readonly reloads: () => { readonly hash: string; readonly history: readonly ReloadEntry[] };
  /** Backend calls of gateway-run tasks this replica holds now. */
  readonly providedRunning: () => number;
}

/** What a console route handler is given: the operator, and the console's parts. */
export interface ConsoleRequestContext {
  readonly operator: Operator;
  readonly policy: ConsolePolicy;
}

/** What the API's handlers use of the console. */
export interface ConsoleApiHost {
  readonly deps: ConsoleDeps;
  readonly scan: LiveScan;
  readonly samples: ConsoleSamples;
  /** The operator behind a request (401/403/503 otherwise); `acting` also needs the operator role. */
  operatorOf(request: FastifyRequest, acting?: boolean): Promise<ConsoleRequestContext>;
}
