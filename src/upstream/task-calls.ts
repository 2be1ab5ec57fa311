/**
 * Calls the gateway makes to a backend about a task record, with no client request to make them
 * for (the door's upstream-level client, built per policy by the policy snapshot): cancelling a
 * task that expired, or whose creation the gateway refused, or that an operator cancels;
 * polling a listened-to task whose backend does not push (src/push/), a bridged task's 2025
 * tasks/result; and listening to a backend's tasks. Best effort: failures are the caller's to
 * log, never surfaced to a client as they are. Each call is framed in the generation of the
 * task's backend (request-framer.ts) and composed once here (gateway-send.ts): the task owner's
 * credentials, the gateway's call timeout, with tracing on a client span linked to the task's
 * creation (src/tracing/task-calls.ts), and the policy snapshot's in-flight count.
 */
import type { Dispatcher } from 'undici';
import type { InFlight } from '../lifecycle/in-flight.js';
import type { Era } from '../mcp/era-name.js';
import type { JsonObject } from '../mcp/json.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { backendWireOf } from '../task-model/task-wire.js';
import type { RequestTrace } from '../tracing/request-trace.js';
import type { Tracing } from '../tracing/tracing.js';
import { composeSend, credentials, GATEWAY_CALL_TIMEOUT_MS, heldIn, sendThrough, spanOutcome, timeLimits, traceContext, type Send } from './gateway-send.js';
import { headerValue } from './gateway-replies.js';
import { readBounded } from './relay-streams.js';
import { frameLegacy, frameModern, LEGACY_VERSION, TASKS_CAPABILITIES, type FramedRequest } from './request-framer.js';

const DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** Why the call is made (a span attribute), and the client request being served, if any. */
export interface GatewayCallContext {
  readonly reason: string;
  readonly during?: RequestTrace;
  /** Read the answer's body for a tasks/cancel too (an operator's cancel reports what the backend said). */
  readonly readAnswer?: boolean;
}

/** The backend's answer: its HTTP status, and for tasks/get (and tasks/result) the body (JSON or an event stream) with its media type. */
export interface GatewayCallAnswer {
  readonly status: number;
  readonly body?: string;
  readonly contentType?: string;
}

/** tasks/result is asked only of a 2025 backend for a task that ended (src/bridge/): it answers at once then. */
export type UpstreamCaller = (record: TaskRecord, method: 'tasks/cancel' | 'tasks/get' | 'tasks/result', context: GatewayCallContext) => Promise<GatewayCallAnswer>;

/**
 * Opens a 2026 subscriptions/listen on the instance holding `record` (and its siblings: same
 * instance, path and credentials) for their backend ids; the caller reads the event stream and
 * aborts `signal` to end it. Not counted in flight: a policy reload closes the old agent under
 * it, and the caller opens it again on the policy in force.
 */
export type UpstreamListener = (record: TaskRecord, upstreamTaskIds: readonly string[], signal: AbortSignal) => Promise<Dispatcher.ResponseData>;

export interface TaskCallsOptions {
  /** The agent (keep-alive pools, timeouts) of each upstream, by name. */
  agentFor(upstream: string): Dispatcher | undefined;
  /**
   * Credentials for a call about this task: a static bearer, or for token exchange the task
   * owner's cached exchange (it rejects when none is left: the call is then not made).
   */
  credentialHeadersFor(record: TaskRecord): Promise<Record<string, string>>;
  /** The policy snapshot's count of running work: a call holds it until its answer is read. */
  readonly inFlight: InFlight;
  /** The largest tasks/get answer read (limits.maxResponseBytes). */
  readonly maxAnswerBytes?: number;
  /** The policy's tracing, if on. */
  readonly tracing?: Tracing;
}

/** The gateway's calls about task records under one policy. */
export interface TaskCalls {
  readonly call: UpstreamCaller;
  readonly listen: UpstreamListener;
}

export function createTaskCalls(options: TaskCallsOptions): TaskCalls {
  const maxAnswerBytes = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  /** The way to the task's instance with the owner's credentials; undici's body timer off for a listen. */
  const sendFor = (record: TaskRecord, bodyTimeoutMs: number): Send => {
    const agent = options.agentFor(record.upstream);
    if (!agent) throw new Error(`no dispatcher for upstream ${record.upstream}`);
    return composeSend(
      sendThrough(agent, record.instance, record.upstreamPath),
      timeLimits(GATEWAY_CALL_TIMEOUT_MS, bodyTimeoutMs),
      credentials(() => options.credentialHeadersFor(record)),
    );
  };

  const call: UpstreamCaller = async (record, method, context) => {
    const base = sendFor(record, GATEWAY_CALL_TIMEOUT_MS);
    const span = options.tracing?.startTaskCall({ upstream: record.upstream, instance: record.instance, task: record, method, reason: context.reason, during: context.during });
    const send = composeSend(base, traceContext(span), spanOutcome(span), heldIn(options.inFlight));
    return send(frameTaskCall(record, method, { taskId: record.upstreamTaskId }), async (reply) => {
      if (method === 'tasks/cancel' && !context.readAnswer) {
        // Drain so the connection returns to the pool; the answer itself does not matter.
        await reply.body.dump();
        return { status: reply.statusCode };
      }
      const body = await readBounded(reply.body, maxAnswerBytes);
      return { status: reply.statusCode, body: body.toString('utf8'), contentType: headerValue(reply.headers['content-type']) };
    });
  };

  const listen: UpstreamListener = async (record, upstreamTaskIds, signal) => {
    // A listen stream is quiet for as long as nothing changes.
    const send = sendFor(record, 0);
    return send({ ...frameTaskCall(record, 'subscriptions/listen', { notifications: { taskIds: upstreamTaskIds } }), signal }, async (reply) => reply);
  };

  return { call, listen };
}

/**
 * A call about a task, framed in the era its backend speaks (backendWireOf: a bridged task's
 * backend speaks the other era than its client, and its record keeps the backend's protocol
 * version). A call naming the task (its taskId) says so in Mcp-Name too.
 */
const TASK_CALL_FRAMING: Readonly<Record<Era, (record: TaskRecord, method: string, params: JsonObject) => FramedRequest>> = {
  legacy: (record, method, params) => frameLegacy(method, params, { version: record.protocolVersion ?? LEGACY_VERSION, session: record.upstreamSession }),
  modern: (record, method, params) =>
    frameModern(method, params, { version: record.protocolVersion, capabilities: TASKS_CAPABILITIES, name: 'taskId' in params ? record.upstreamTaskId : undefined }),
};

function frameTaskCall(record: TaskRecord, method: string, params: JsonObject): FramedRequest {
  return TASK_CALL_FRAMING[backendWireOf(record).era](record, method, params);
}
