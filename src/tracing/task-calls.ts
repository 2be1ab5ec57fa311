/**
 * Spans for the calls the gateway makes to a backend on a task's behalf: the cancels of expired
 * and refused tasks (src/upstream/task-calls.ts), and the backend calls of the tasks the gateway
 * runs itself (src/provided/call-start.ts). Each call is one client span, LINKED to the server
 * span of the request that created the task, so a task's whole life can be found from its creation:
 *
 * - made while serving a client request (`during`), the span is a child of that request's
 *   server span, with a link to the creation;
 * - made on the gateway's own time (an expiry sweep, a runner holding the call), the span is a
 *   child of the creation itself, so it joins the creating request's trace.
 *
 * How to use it (with tracing off `snapshot.tracing` is undefined and none of this runs):
 *
 *     // when the task is created, in the creating request (TaskRecord.traceparent is set this way):
 *     const link = request.trace?.taskLink();                        // a W3C traceparent string, storable
 *     // for every backend call made for the task, later, on any replica:
 *     const span = snapshot.tracing?.startTaskCall({
 *       upstream: record.upstream, instance: record.instance,   // who is called
 *       task: record,                                           // once the task exists: handle, tool, status, traceparent
 *       method: 'tools/call', tool: record.tool, reason: 'run',
 *       during: request?.trace,                                       // when a client request is being served
 *     });
 *     // the door's layers put it on the call (src/upstream/gateway-send.ts):
 *     const send = composeSend(base, traceContext(span),      // traceparent / tracestate in the headers and params._meta
 *       spanOutcome(span));                                    // responded(status) / failed(error's code), then end()
 *     // or, for a call whose outcome is read otherwise: span?.responded(status, answer) / span?.failed(kind); span?.end()
 */
import { ROOT_CONTEXT, SpanKind, trace, type Attributes, type Link } from '@opentelemetry/api';
import type { McpMessage } from '../mcp/jsonrpc.js';
import type { TaskRecord } from '../task-model/task-record.js';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_TASK_HANDLE_HASH,
  ATTR_TASK_STATUS,
  ATTR_TASK_TOOL,
  ATTR_TASKGATE_CALL_REASON,
  ATTR_TASKGATE_ERA,
  ATTR_TASKGATE_LINK,
  ATTR_TASKGATE_UPSTREAM,
  upstreamTransportAttributes,
} from './conventions.js';
import { injectHeaders, injectMeta, spanContextOfTraceparent } from './propagation.js';
import type { RequestTrace, SpanSource } from './request-trace.js';
import { UpstreamSpan } from './upstream-span.js';

/** What a gateway call's span says about its task; `traceparent` is the link kept at creation. */
export type TaskCallSubject = Pick<TaskRecord, 'handle' | 'tool' | 'status' | 'era' | 'protocolVersion' | 'traceparent'>;

export interface TaskCallOptions {
  /** The upstream's name in the policy. */
  readonly upstream: string;
  /** The origin of the backend instance called. */
  readonly instance: string;
  /** The task the call is for, once it exists (a 2026 call runs before it may become one). */
  readonly task?: TaskCallSubject;
  /** The JSON-RPC method sent to the backend. */
  readonly method: string;
  /** A short fixed word for why the gateway makes the call (taskgate.call.reason): expired, refused, run, … */
  readonly reason: string;
  /** For a tools/call: the tool run (the span name's target and gen_ai.tool.name). */
  readonly tool?: string;
  /** The client request being served when the call is made, if any. */
  readonly during?: RequestTrace;
}

/** One backend call made by the gateway for a task. Every method is safe to call more than once. */
export interface TaskCallSpan {
  /** Puts this span's traceparent (and tracestate) into the backend request's headers. */
  injectHeaders(headers: Record<string, string>): void;
  /** Puts them at the root of a JSON-RPC params object's `_meta` (created when missing). */
  injectMeta(params: Record<string, unknown>): void;
  /** The backend answered: its HTTP status and, when it was read, its JSON-RPC answer. */
  responded(statusCode: number, answer?: McpMessage): void;
  /** The backend could not be reached or did not answer (error.type: refused, timeout, reset, other). */
  failed(kind: string): void;
  end(): void;
}

export function startTaskCall(source: SpanSource, options: TaskCallOptions): TaskCallSpan {
  const { task, method, tool } = options;
  const creation = spanContextOfTraceparent(task?.traceparent);
  const links: Link[] = creation ? [{ context: creation, attributes: { [ATTR_TASKGATE_LINK]: 'task_creation' } }] : [];
  const parent = options.during?.context ?? (creation ? trace.setSpanContext(ROOT_CONTEXT, creation) : ROOT_CONTEXT);
  const span = source.tracer.startSpan(tool === undefined ? method : `${method} ${tool}`, { kind: SpanKind.CLIENT, links }, parent);
  if (span.isRecording()) {
    const attributes: Attributes = {
      [ATTR_MCP_METHOD_NAME]: method,
      [ATTR_TASKGATE_UPSTREAM]: options.upstream,
      [ATTR_TASKGATE_CALL_REASON]: options.reason,
      ...upstreamTransportAttributes('POST', new URL(options.instance)),
    };
    if (task) {
      attributes[ATTR_TASKGATE_ERA] = task.era;
      attributes[ATTR_TASK_HANDLE_HASH] = source.hashHandle(task.handle);
      attributes[ATTR_TASK_STATUS] = task.status;
      attributes[ATTR_TASK_TOOL] = task.tool;
      if (task.protocolVersion !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = task.protocolVersion;
    }
    if (tool !== undefined && method === 'tools/call') {
      attributes[ATTR_GEN_AI_OPERATION_NAME] = 'execute_tool';
      attributes[ATTR_GEN_AI_TOOL_NAME] = tool;
    }
    span.setAttributes(attributes);
  }
  const call = new UpstreamSpan(span);
  return {
    injectHeaders: (headers) => injectHeaders(headers, call.carrier),
    injectMeta: (params) => void injectMeta(params, call.carrier),
    responded: (statusCode, answer) => {
      call.responded(statusCode);
      if (answer) call.answered(answer);
    },
    failed: (kind) => call.failed(kind),
    end: () => call.end(),
  };
}
