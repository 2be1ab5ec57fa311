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
import type { PrincipalActivityReader } from '../observability/principal-activity.js';
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

/** What one replica learnt of an upstream's own task support (src/provided/backend-support.ts). */
export interface UpstreamTaskSupport {
  /** 2026: whether its server/discover declared the tasks extension; absent before one was seen. */
  readonly modernExtension?: boolean;
  /** 2025: its tools' own execution.taskSupport, by tool (at most the first maxTools by name). */
  readonly legacyTools: Readonly<Record<string, string>>;
  readonly legacyToolsLearnt: number;
}

/**
 * What this replica holds that no store does, read-only, from the rooms that hold it: gateway.ts
 * binds each to its room (capabilities never import each other), the console only reads.
 */
export interface ReplicaFacts {
  /** Listens (2026 subscriptions/listen) open on this replica that were granted the task (src/push/). */
  pushListeners(handle: string): number;
  /** What this replica learnt of `upstream`'s own task support; undefined when nothing yet. */
  taskSupport(upstream: string, maxTools: number): UpstreamTaskSupport | undefined;
  /** Each principal's task requests as this replica saw them (src/observability/principal-activity.ts). */
  readonly principals: PrincipalActivityReader;
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
  readonly replica: ReplicaFacts;
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
