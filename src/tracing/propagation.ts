/**
 * W3C Trace Context in both of the places MCP carries it: the HTTP `traceparent`/`tracestate`
 * headers, and the same two keys at the root of `params._meta` (the OpenTelemetry MCP
 * conventions and SEP-414 write them unprefixed), which survive a backend that proxies on or
 * speaks stdio behind an adapter. Parsing and formatting are @opentelemetry/core's
 * W3CTraceContextPropagator; contexts are passed explicitly, never through a global context
 * manager, so one process can run several gateways.
 */
import { defaultTextMapGetter, defaultTextMapSetter, isSpanContextValid, ROOT_CONTEXT, trace, type Context, type SpanContext } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { IncomingHttpHeaders } from 'node:http';
import { isPlainObject, serializeMessages } from '../mcp/jsonrpc.js';
import type { McpContext } from '../mcp/mcp-stage.js';

const propagator = new W3CTraceContextPropagator();

/** The two values that carry a span's context onward. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** The remote span context in `carrier` (headers, or a `_meta` object), if it holds a valid one. */
export function remoteSpanContext(carrier: Record<string, unknown> | IncomingHttpHeaders | undefined): SpanContext | undefined {
  // Most requests carry none: skip the propagator's work for them.
  if (carrier?.traceparent === undefined) return undefined;
  const spanContext = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter));
  return spanContext && isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** A stored `traceparent` (a task's link to its creating request) as a span context. */
export function spanContextOfTraceparent(traceparent: string | undefined): SpanContext | undefined {
  return traceparent === undefined ? undefined : remoteSpanContext({ traceparent });
}

/** traceparent and tracestate for the span in `context`. */
export function carrierOf(context: Context): TraceCarrier {
  const carrier: Partial<TraceCarrier> = {};
  propagator.inject(context, carrier, defaultTextMapSetter);
  return carrier as TraceCarrier;
}

/** Replaces whatever trace context the client sent in these upstream headers with `carrier`. */
export function injectHeaders(headers: IncomingHttpHeaders | Record<string, string>, carrier: TraceCarrier): void {
  headers.traceparent = carrier.traceparent;
  if (carrier.tracestate) headers.tracestate = carrier.tracestate;
  else delete headers.tracestate;
}

/**
 * Sets `_meta.traceparent` (and `tracestate`) of a JSON-RPC params object, creating `_meta`
 * when it is missing. A `_meta` that is not an object is left alone: it is the client's, and
 * the backend answers it as it would without the gateway.
 */
export function injectMeta(params: Record<string, unknown>, carrier: TraceCarrier): boolean {
  const meta = params._meta === undefined ? (params._meta = {}) : params._meta;
  if (!isPlainObject(meta)) return false;
  meta.traceparent = carrier.traceparent;
  if (carrier.tracestate) meta.tracestate = carrier.tracestate;
  else delete meta.tracestate;
  return true;
}

/**
 * The body to forward with `carrier` in the `_meta` of every request and notification in it.
 * The messages are the ones the mcp and tasks stages hold (with any rewrite those made), so
 * serialising them gives the body they would forward plus the context. Only ever called with
 * tracing on: without it the client's bytes go on untouched.
 */
export function bodyWithTraceContext(mcp: McpContext, carrier: TraceCarrier): Buffer {
  let touched = false;
  for (const message of mcp.messages) {
    if (message.kind === 'response') continue;
    const params = message.params === undefined ? (message.params = {}) : message.params;
    if (isPlainObject(params) && injectMeta(params, carrier)) touched = true;
  }
  return touched ? Buffer.from(serializeMessages(mcp.messages, mcp.batch)) : mcp.body;
}
