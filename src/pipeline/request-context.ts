/**
 * What the pipeline stages attach to a request as it passes through them (DESIGN.md §2):
 * each stage adds one typed thing and hands the request on.
 */
import type { Principal } from '../auth/principal.js';
import type { SubjectToken } from '../auth/subject-token.js';
import type { CallHold } from '../limits/call-hold.js';
import type { LimitRefusal } from '../limits/limits-stage.js';
import type { McpContext } from '../mcp/mcp-stage.js';
import type { PolicySnapshot, RouteContext, RouteRuntime } from './policy-snapshot.js';
import type { Instance } from '../routing/balancer.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { RequestTrace } from '../tracing/request-trace.js';
import type { ClientAbort } from '../upstream/client-abort.js';

import type { Era } from '../mcp/era.js';

export type { Era, McpContext, RouteContext };

export interface RequestContext {
  /** The policy this request runs under, read once at its start. */
  readonly snapshot: PolicySnapshot;
  readonly route: RouteRuntime;
  /** The verified caller; undefined when the policy runs without authentication (auth.mode none). */
  principal?: Principal;
  /** Opaque, stable key of the principal (auth.principalKey), what task ownership compares. */
  principalKey?: string;
  /** The client's verified token, for a token exchange only; never logged, never forwarded. */
  subjectToken?: SubjectToken;
  /** The token obtained for this request's upstream (credentials type token-exchange). */
  upstreamToken?: string;
  mcp?: McpContext;
  /** The 2025-era session this request belongs to (Mcp-Session-Id), if any. */
  sessionId?: string;

  // Set by the tasks stage.
  /** The task this request operates on (tasks/*), after the owner check passed. */
  task?: TaskRecord;
  /** A task this request's answer created. */
  createdTask?: TaskRecord;
  /** The handle a tasks/* request named, as sent (cut to 64 characters), for the audit trail. */
  requestedHandle?: string;
  /** The task status this request's answer showed. */
  statusSeen?: TaskRecord['status'];
  /** The tool named by a tools/call. */
  toolName?: string;
  /** Whether a 2026-07-28 request declared the tasks extension. */
  declaresTasks?: boolean;
  /** What the limits stage refused this request for (src/limits/), for the audit trail. */
  limitRefusal?: LimitRefusal;
  /**
   * A task operation made through a tool the gateway answers (the status and cancel tools of
   * background calls, src/background/) rather than a tasks/* method: audited as that event.
   */
  taskOperation?: 'get' | 'cancel';
  /**
   * A 2025 tools/call holding a concurrency slot (src/limits/call-hold.ts): its upstream
   * requests take this hold's signal, not the client's, and report their end to it.
   */
  callHold?: CallHold;
  /** How the tasks stage decided, for the audit trail and metrics. */
  taskOutcome?: 'allowed' | 'not_found' | 'denied' | 'throttled';
  pollOutcome?: 'forwarded' | 'cached' | 'rejected';
  /** A forwarded tasks/get: the store's tag of the snapshot it held (Store.recordPoll). */
  snapshotTag?: string;
  /** Headers sent upstream in place of the client's (a task's own session or id); null removes. */
  upstreamHeaders?: Record<string, string | null>;
  /** Gives back this request's slot among its principal's open tasks/result waits. */
  releaseResultWait?: () => void;
  /** An HTTP status (and headers) replacing the upstream's on a JSON reply the gateway rewrote into an error. */
  replyStatus?: number;
  replyHeaders?: Record<string, string>;

  instance?: Instance;
  /** Instances that refused this request's connection (for fail-over of new work). */
  refused?: Set<string>;
  /**
   * Aborted when the response will not finish: the client went away, or the gateway gave up
   * on it (time limit, an error after the headers). Also the upstream request's signal,
   * except for a call the limits stage holds (callHold).
   */
  readonly abort: ClientAbort;
  /** The preHandler answered (tasks stage, status push, provided tasks): nothing is forwarded. */
  answeredLocally?: boolean;
  /** This request's spans; undefined with tracing off (src/tracing/). */
  readonly trace?: RequestTrace;
  upstreamStartedAt?: bigint;
}

declare module 'fastify' {
  interface FastifyRequest {
    tg: RequestContext;
  }
}
