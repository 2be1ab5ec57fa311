/**
 * Starting a provided task's backend call: the plain tools/call the backend gets (the
 * client's params without `task`, and for 2026 without the tasks extension declared, so the
 * backend can never make a task of its own), under a JSON-RPC id and progress token of the
 * gateway's, with the headers a forwarded call would carry (the route's credentials, never the
 * client's token; the task's own session for 2025).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TaskRequest } from '../tasks/task-request.js';
import { CLIENT_CAPABILITIES_META, isModernVersion, TASKS_EXTENSION } from '../mcp/era.js';
import type { Instance } from '../routing/balancer.js';
import type { JsonObject, ProvidedCall } from '../task-model/provided-state.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { RequestTrace } from '../tracing/request-trace.js';
import type { Tracing } from '../tracing/tracing.js';
import { isObject } from '../mcp/json.js';
import { copyRequestHeaders } from '../upstream/backend-route.js';
import { traceContext } from '../upstream/gateway-send.js';
import { newRequestId } from '../upstream/request-framer.js';
import { CallRunner, type CallReports, type CallTarget, type FailOver } from './call-runner.js';

/** The call a tools/call request asks for, as the gateway will send it (and send it again on a retry). */
export function captureCall(clientHeaders: IncomingHttpHeaders, params: JsonObject): ProvidedCall {
  const { task: _task, ...plain } = params;
  const meta = isObject(plain._meta) ? { ...plain._meta } : undefined;
  const capabilities = meta && isObject(meta[CLIENT_CAPABILITIES_META]) ? { ...meta[CLIENT_CAPABILITIES_META] } : undefined;
  if (capabilities && isObject(capabilities.extensions)) {
    const { [TASKS_EXTENSION]: _declared, ...others } = capabilities.extensions;
    capabilities.extensions = others;
    meta![CLIENT_CAPABILITIES_META] = capabilities;
  }
  if (meta) plain._meta = meta;
  // Only the protocol's own headers are kept for a retry: never cookies or credentials.
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(clientHeaders)) {
    if (name.startsWith('mcp-') && name !== 'mcp-session-id' && typeof value === 'string') headers[name] = value;
  }
  return { params: plain, headers };
}

export interface CallPlan {
  readonly call: ProvidedCall;
  readonly instance: Instance;
  /** 2025: the session the task lives in upstream (the client's backend session). */
  readonly session?: string;
  /** Params added for this call: 2026 inputResponses and requestState on a retry. */
  readonly extraParams?: JsonObject;
  /** What is left of the task's timeout (upstreams.*.providedTasks.timeout, all its calls together). */
  readonly timeoutMs: number;
  /** A later call's failure message past timeoutMs (it then ran out of the task's timeout, not its own). */
  readonly timeoutMessage?: string;
}

/** The call's target: the route's channel to the instance, with the headers `request` would be forwarded with. */
export function callTarget(request: TaskRequest, plan: CallPlan, fromClient: boolean): CallTarget {
  // The creating request's own headers are what a forwarded call would carry; a retry (from a
  // tasks/update) carries the original call's protocol headers instead of its own.
  const headers: IncomingHttpHeaders = fromClient ? copyRequestHeaders(request.clientHeaders) : { ...plan.call.headers };
  headers['content-type'] = 'application/json';
  headers.accept = 'application/json, text/event-stream';
  if (plan.session === undefined) delete headers['mcp-session-id'];
  else headers['mcp-session-id'] = plan.session;
  // The snapshot's count, not the request, holds the channel: a call must not keep its request alive.
  return request.route.channelTo(request, plan.instance, headers);
}

/**
 * Where a call that is bound to no session goes when its instance refuses the connection: the
 * next instance the pool offers that has not refused it yet (the refusing one cools down,
 * BackendRoute), with the headers a call there carries. Undefined for a session's call, which
 * lives on its instance.
 */
export function failOverFor(request: TaskRequest, plan: CallPlan, fromClient: boolean): FailOver | undefined {
  if (plan.session !== undefined) return undefined;
  const refused = new Set<string>([plan.instance.url]);
  return () => {
    const next = request.route.pool.selectInstance(Date.now(), refused);
    if (!next || refused.has(next.url)) return undefined;
    refused.add(next.url);
    return callTarget(request, { ...plan, instance: next }, fromClient);
  };
}

/**
 * With tracing on, what a call's client span says (src/tracing/task-calls.ts): a child of the
 * request being served (`during`), else of the task's creation, linked to the creation.
 */
export interface CallTrace {
  readonly tracing: Tracing;
  readonly upstream: string;
  /** run: the first call of a task (or of a 2026 call that may become one); retry: a later one. */
  readonly reason: 'run' | 'retry';
  readonly during?: RequestTrace;
  readonly task?: TaskRecord;
}

/** The CallTrace of a call started while `request` is served; undefined with tracing off. */
export function callTraceOf(request: TaskRequest, reason: CallTrace['reason'], task?: TaskRecord): CallTrace | undefined {
  const tracing = request.route.tracing;
  return tracing && { tracing, upstream: request.route.pool.upstream, reason, during: request.trace, task };
}

/** Starts the call: the runner sends it at once and reports to `reports`. */
export function startCall(target: CallTarget, plan: Pick<CallPlan, 'call' | 'extraParams' | 'timeoutMs' | 'timeoutMessage'>, limits: { maxResponseBytes: number; maxSseEventBytes: number }, reports: CallReports, trace?: CallTrace, failOver?: FailOver): CallRunner {
  const callId = newRequestId();
  const meta = isObject(plan.call.params._meta) ? plan.call.params._meta : {};
  // A progress token of the gateway's, so the backend's progress reaches the task's statusMessage.
  const params: JsonObject = { ...plan.call.params, ...plan.extraParams, _meta: { ...meta, progressToken: callId } };
  const tool = typeof params.name === 'string' ? params.name.slice(0, 128) : undefined;
  const span = trace?.tracing.startTaskCall({ ...trace, instance: target.origin, method: 'tools/call', tool });
  const cancelNotice = !isModernVersion(target.headers['mcp-protocol-version']);
  // With tracing on, the call's context goes with its request (headers and _meta) and with its 2025 cancel notice (headers).
  const runner = new CallRunner(
    callId,
    { jsonrpc: '2.0', id: callId, method: 'tools/call', params },
    target,
    { timeoutMs: plan.timeoutMs, timeoutMessage: plan.timeoutMessage, cancelNotice, maxResponseBytes: limits.maxResponseBytes, maxSseEventBytes: limits.maxSseEventBytes },
    reports,
    traceContext(span),
    failOver,
  );
  if (span) {
    void runner.outcome
      .then((outcome) => (outcome.kind === 'answer' ? span.responded(outcome.status, outcome.response) : span.failed(outcome.failure)))
      .finally(() => span.end());
  }
  return runner;
}
