/**
 * The spans of one client request: its server span, and a client span for each call to the
 * backend made to answer it (a refused connection that fails over makes two). Exists only
 * with tracing on (the exchange's `trace`); every stage reaches it through that optional field, so
 * with tracing off a request pays one property read per stage and nothing else.
 *
 * The server span is started the first time something needs it, not when the request arrives:
 * by then the body has been parsed, so a context the client sent in `params._meta` can be its
 * parent, as the MCP conventions want (the header's context, when different, becomes a link).
 * Its start time is still the request's arrival.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Link, type Span, type Tracer } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import { describeError } from '../errors.js';
import type { MessageHook } from '../mcp/json-reply.js';
import type { McpMessage } from '../mcp/jsonrpc.js';
import { isJson } from '../mcp/media-type.js';
import type { ErrorCode } from '../errors.js';
import type { McpContext } from '../mcp/mcp-stage.js';
import type { ExchangeRecord } from '../observability/exchange-facts.js';
import type { HandleHasher } from '../observability/handle-hash.js';
import type { EraWire } from '../task-model/task-wire.js';
import { upstreamSessionOf } from '../mcp/mcp-stage.js';
import {
  answerOutcome,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_TASK_HANDLE_HASH,
  ATTR_TASKGATE_ABORTED,
  ATTR_TASKGATE_ERROR_CODE,
  ATTR_TASKGATE_LINK,
  mcpAttributes,
  mcpFactsOf,
  metaOf,
  serverTransportAttributes,
  taskAttributes,
  upstreamTransportAttributes,
} from './conventions.js';
import { bodyWithTraceContext, carrierOf, injectHeaders, remoteSpanContext } from './propagation.js';
import { UpstreamSpan } from './upstream-span.js';

/** What a request's spans are made with: the policy's tracer and the gateway's handle hasher. */
export interface SpanSource {
  readonly tracer: Tracer;
  readonly hashHandle: HandleHasher;
}

/** What the spans read of the request they trace: the exchange, and its transport. */
export interface TracedRequest extends ExchangeRecord {
  readonly mcp?: McpContext;
  readonly wire: Pick<EraWire, 'sessions'>;
  readonly clientHeaders: IncomingHttpHeaders;
  readonly httpVersion: string;
  readonly sessionId?: string;
  readonly upstreamHeaders?: Record<string, string | null>;
}

interface UpstreamResponseView {
  readonly statusCode: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly stream: NodeJS.ReadableStream;
}

export class RequestTrace {
  private readonly startedAt = performance.now();
  private server: Span | undefined;
  private serverContext: Context = ROOT_CONTEXT;
  private upstream: UpstreamSpan | undefined;
  /** The open call's reply is one JSON answer: the call ends when that answer has been read. */
  private endsWithAnswer = false;
  /** The answer the client got to its request from the backend (after the gateway's rewriting). */
  private answer: McpMessage | undefined;
  private finished = false;

  /** The pipeline calls finish() when the response closes, finished or cut off by the client. */
  constructor(
    private readonly source: SpanSource,
    private readonly request: TracedRequest,
  ) {}

  /** The context whose span is this request's server span (started now if not yet). */
  get context(): Context {
    this.serverSpan();
    return this.serverContext;
  }

  /**
   * A serialisable link to this request's server span: its W3C traceparent. A task created by
   * this request keeps it (TaskRecord.traceparent) so that calls the gateway makes for the
   * task later join the same trace (Tracing.startTaskCall).
   */
  taskLink(): string {
    return carrierOf(this.context).traceparent;
  }

  /**
   * A call to the backend starts: its client span, child of the server span, goes into the
   * upstream headers and, for a JSON-RPC body, into `_meta` of its messages. Answers the body
   * to send (the client's own when there is nothing to carry it in).
   */
  startUpstreamCall(headers: IncomingHttpHeaders, endpoint: URL, body?: Buffer): Buffer | undefined {
    this.upstream?.end();
    this.endsWithAnswer = false;
    const tg = this.request;
    const facts = mcpFactsOf(tg.mcp?.message, tg.httpMethod);
    const span = this.source.tracer.startSpan(facts.name, { kind: SpanKind.CLIENT }, this.context);
    if (span.isRecording()) {
      span.setAttributes(mcpAttributes(facts, tg, upstreamSessionOf(tg)));
      span.setAttributes(upstreamTransportAttributes(tg.httpMethod, endpoint));
      if (tg.task) span.setAttribute(ATTR_TASK_HANDLE_HASH, this.source.hashHandle(tg.task.handle));
    }
    const call = new UpstreamSpan(span);
    this.upstream = call;
    injectHeaders(headers, call.carrier);
    return body !== undefined && tg.mcp ? bodyWithTraceContext(tg.mcp, call.carrier) : body;
  }

  /**
   * The backend answered with headers. A JSON reply to a request ends its call when the
   * answer has been read (observeMessages); anything else (an event stream, a 202) when the
   * backend's body ends.
   */
  upstreamResponded(res: UpstreamResponseView): void {
    const call = this.upstream;
    if (!call) return;
    call.responded(res.statusCode);
    const contentType = res.headers['content-type'];
    this.endsWithAnswer = this.request.mcp?.message?.kind === 'request' && isJson(Array.isArray(contentType) ? contentType[0] : contentType);
    if (!this.endsWithAnswer) res.stream.once('close', () => call.end());
  }

  /** The backend could not be reached or did not answer in time (`kind`: refused, timeout, reset, other). */
  upstreamFailed(kind: string): void {
    this.upstream?.failed(kind);
    this.upstream = undefined;
  }

  /**
   * Wraps the tasks stage's hook on the way back, to see the backend's answer to this
   * request before the gateway rewrites it (the client span's outcome) and after (what the
   * client got: the server span's).
   */
  observeMessages(hook: MessageHook): MessageHook {
    const sent = this.request.mcp?.message;
    if (sent?.kind !== 'request') return hook;
    return async (message) => {
      if (message.kind !== 'response' || message.id !== sent.id) return hook(message);
      const call = this.upstream;
      call?.answered(message);
      // A JSON reply's call is over once its answer is read; an event stream's when it ends.
      if (this.endsWithAnswer) call?.end();
      const rewrite = await hook(message);
      this.answer = rewrite ?? message;
      return rewrite;
    };
  }

  private serverSpan(): Span {
    if (this.server) return this.server;
    const tg = this.request;
    const facts = mcpFactsOf(tg.mcp?.message, tg.httpMethod);
    // MCP-level context (params._meta) is the parent; a different one in the headers is linked.
    const fromMeta = remoteSpanContext(metaOf(tg.mcp?.message));
    const fromHeaders = remoteSpanContext(tg.clientHeaders);
    const parent = fromMeta ?? fromHeaders;
    const links: Link[] = fromMeta && fromHeaders && fromHeaders.spanId !== fromMeta.spanId ? [{ context: fromHeaders, attributes: { [ATTR_TASKGATE_LINK]: 'http_parent' } }] : [];
    const span = this.source.tracer.startSpan(
      facts.name,
      { kind: SpanKind.SERVER, startTime: this.startedAt, links },
      parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
    );
    if (span.isRecording()) {
      span.setAttributes(serverTransportAttributes(tg));
      span.setAttributes(mcpAttributes(facts, tg, tg.sessionId));
    }
    this.server = span;
    this.serverContext = trace.setSpan(ROOT_CONTEXT, span);
    return span;
  }

  /** The response is over (`rejection`: the catalogue code the gateway answered with, if any). */
  finish(statusCode: number, rejection: ErrorCode | undefined): void {
    if (this.finished) return;
    this.finished = true;
    const span = this.serverSpan();
    // Whatever call is still open (a reply the gateway could not read) ends with the request.
    this.upstream?.end();
    if (span.isRecording()) this.recordOutcome(span, statusCode, rejection);
    span.end(performance.now());
  }

  private recordOutcome(span: Span, statusCode: number, rejection: ErrorCode | undefined): void {
    const tg = this.request;
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, statusCode);
    const tasks = taskAttributes(tg, this.source.hashHandle);
    if (tasks) span.setAttributes(tasks);
    if (tg.abort.aborted) span.setAttribute(ATTR_TASKGATE_ABORTED, true);
    if (rejection !== undefined) {
      // The gateway answered with an error of its catalogue: its code, and its fixed message.
      const described = describeError(rejection);
      span.setAttributes({ [ATTR_TASKGATE_ERROR_CODE]: rejection, [ATTR_RPC_RESPONSE_STATUS_CODE]: String(described.rpcCode), [ATTR_ERROR_TYPE]: String(described.rpcCode) });
      span.setStatus({ code: SpanStatusCode.ERROR, message: described.message });
      return;
    }
    const outcome = this.answer && answerOutcome(this.answer);
    if (outcome) {
      // No description here: the message the client got may name its task by handle.
      if (outcome.rpcCode !== undefined) span.setAttribute(ATTR_RPC_RESPONSE_STATUS_CODE, outcome.rpcCode);
      span.setAttribute(ATTR_ERROR_TYPE, outcome.errorType);
      span.setStatus({ code: SpanStatusCode.ERROR });
    } else if (statusCode >= 500) {
      span.setAttribute(ATTR_ERROR_TYPE, String(statusCode));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
}
