/**
 * One client span: one call to a backend, from the request going out to the backend's answer
 * (or failure). Used for the forwarded client requests (request-trace.ts) and for the calls
 * the gateway makes itself (task-calls.ts).
 */
import { ROOT_CONTEXT, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { McpMessage } from '../mcp/jsonrpc.js';
import { answerOutcome, ATTR_ERROR_TYPE, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_RPC_RESPONSE_STATUS_CODE } from './conventions.js';
import { carrierOf, type TraceCarrier } from './propagation.js';

/** Error descriptions from a backend are cut to this: a span is no place for a whole message. */
const MAX_DESCRIPTION = 256;

export class UpstreamSpan {
  /** What goes to the backend: this span as the parent of whatever the backend records. */
  readonly carrier: TraceCarrier;
  private ended = false;

  constructor(private readonly span: Span) {
    this.carrier = carrierOf(trace.setSpan(ROOT_CONTEXT, span));
  }

  /** The backend's HTTP status; a 5xx marks the call failed unless its JSON-RPC answer says more. */
  responded(statusCode: number): void {
    if (this.ended || !this.span.isRecording()) return;
    this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, statusCode);
    if (statusCode >= 500) {
      this.span.setAttribute(ATTR_ERROR_TYPE, String(statusCode));
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }

  /** The backend's JSON-RPC answer to the call, as it came (before the gateway rewrote it). */
  answered(message: McpMessage): void {
    if (this.ended || !this.span.isRecording()) return;
    const outcome = answerOutcome(message);
    if (!outcome) return;
    if (outcome.rpcCode !== undefined) this.span.setAttribute(ATTR_RPC_RESPONSE_STATUS_CODE, outcome.rpcCode);
    this.span.setAttribute(ATTR_ERROR_TYPE, outcome.errorType);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.description?.slice(0, MAX_DESCRIPTION) });
  }

  /** No answer: the connection was refused or reset, or it timed out (`kind` is error.type). */
  failed(kind: string): void {
    if (this.ended) return;
    if (this.span.isRecording()) {
      this.span.setAttribute(ATTR_ERROR_TYPE, kind);
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.end();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.span.end();
  }
}
