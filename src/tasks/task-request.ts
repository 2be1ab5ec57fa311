/**
 * One client request as the tasks stage and its capabilities see it (DESIGN.md §2-3): what
 * they read (the parsed message and its era, the caller, the route's door to the backends,
 * the log, the abort signal) and what they decide. The pipeline keeps one per request
 * (src/pipeline/exchange.ts) and hands it here typed as this view; nothing here knows fastify,
 * so the stage and every capability can be driven by a plain object in a test.
 *
 * What they decide goes in two places:
 * - the answer: a LocalAnswer returned (extension-points.ts), or undefined to forward;
 * - for a forward, the plan below (`instance`, `upstreamHeaders` of Caller, `mcp.body`
 *   rewritten), which the pipeline applies when it sends; and the TaskFacts they learn, for
 *   the audit trail, the request log and the span.
 */
import type { RequestLog } from '../observability/logger.js';
import type { CallHold } from '../limits/call-hold.js';
import type { McpContext } from '../mcp/mcp-stage.js';
import type { EraWire } from '../task-model/task-wire.js';
import type { ExchangeRecord } from '../observability/exchange-facts.js';
import type { Instance } from '../routing/balancer.js';
import type { Caller } from '../upstream/backend-route.js';
import type { ClientAbort } from '../upstream/client-abort.js';

export interface TaskRequest extends ExchangeRecord, Caller {
  readonly route: Caller['route'];
  /** The parsed body of a POST; undefined on a GET or DELETE. */
  readonly mcp?: McpContext;
  /**
   * The request's era as a strategy (task-model/task-wire.ts): the wire of `mcp.era`, looked up
   * once by the pipeline when the mcp stage decided the era. A request without a body is a
   * legacy GET or DELETE (the modern era has neither), so its wire is the legacy one.
   */
  readonly wire: EraWire;
  /** The HTTP method (a legacy GET stream is the session's own). */
  readonly httpMethod: string;
  /** The legacy session this request belongs to (Mcp-Session-Id), if any. */
  readonly sessionId?: string;
  readonly log: RequestLog;
  /**
   * Aborted when the response will not finish: the client went away, or the gateway gave up
   * on it (time limit, an error after the headers). Also the upstream request's signal,
   * except for a call the limits stage holds (callHold).
   */
  readonly abort: ClientAbort;
  /** A legacy tools/call holding a concurrency slot (src/limits/call-hold.ts). */
  readonly callHold?: CallHold;
  /** The instance the request goes to: the routing stage's choice, or the task's own. */
  instance?: Instance;
  /** A forwarded tasks/get: the store's tag of the snapshot it held (Store.recordPoll). */
  snapshotTag?: string;
  /** Gives back this request's slot among its principal's open tasks/result waits. */
  releaseResultWait?: () => void;
  /** An HTTP status (and headers) replacing the upstream's on a JSON reply the gateway rewrote into an error. */
  replyStatus?: number;
  replyHeaders?: Record<string, string>;
}
