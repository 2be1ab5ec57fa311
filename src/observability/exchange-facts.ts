/**
 * What the stages learn about one request while they serve it, and what the request log, the
 * audit trail, the metrics and the span read once it has ended (Envoy's stream info, read by
 * its access log). The pipeline keeps one per request (src/pipeline/exchange.ts); each stage is
 * handed the view it works with and writes the facts it learns there, as it learns them: a
 * stage that refuses a request by throwing has already said why (a refused lookup is audited
 * as denied), so a fact never depends on a decision reaching the pipeline.
 *
 * Structural views only: this floor names no stage, so the types below say what is read of a
 * route, an instance or a body, never which room built them.
 */
import type { Era } from '../mcp/era.js';
import type { McpMessage } from '../mcp/jsonrpc.js';
import type { Principal } from '../task-model/principal.js';
import type { TaskRecord } from '../task-model/task-record.js';

/** What the limits stage refused a request for (src/limits/), for the audit trail and metrics. */
export interface LimitRefusal {
  readonly limit: 'rate' | 'concurrency' | 'suspended';
  readonly scope: 'global' | 'tool' | 'tasks';
}

/** How the tasks stage decided a task operation. */
export type TaskOutcome = 'allowed' | 'not_found' | 'denied' | 'throttled';
export type PollOutcome = 'forwarded' | 'cached' | 'rejected';

/** What the tasks stage and its capabilities learn of a request's task work. */
export interface TaskFacts {
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
  taskOutcome?: TaskOutcome;
  pollOutcome?: PollOutcome;
  /**
   * A task operation made through a tool the gateway answers (the status and cancel tools of
   * background calls, src/background/) rather than a tasks/* method: audited as that event.
   */
  taskOperation?: 'get' | 'cancel';
  /** What the limits stage refused this request for. */
  limitRefusal?: LimitRefusal;
}

/** A finished request as observability reads it: who, what, where it went, what was decided. */
export interface ExchangeRecord extends TaskFacts {
  readonly httpMethod: string;
  readonly requestId: string;
  /** The client's address as listen.trustProxy says to believe it. */
  readonly clientIp: string;
  readonly route: { readonly path: string; readonly pool: { readonly upstream: string } };
  readonly instance?: { readonly url: string };
  readonly mcp?: { readonly era: Era; readonly message: McpMessage | undefined };
  readonly principal?: Principal;
  readonly principalKey?: string;
  readonly abort: { readonly aborted: boolean };
}
