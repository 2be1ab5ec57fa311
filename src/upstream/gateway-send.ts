/**
 * The requests the gateway makes to a backend itself (a gateway-run task's call, a bridged call,
 * a listen, a poll or cancel about a task record, a generation probe; not the forward of a
 * client's own request, BackendRoute.forward): one undici request at the bottom (sendThrough),
 * and what every such request carries added around it by small layers, composed the way undici
 * composes interceptors around a dispatcher (Dispatcher.compose): time limits, credentials,
 * trace context, the policy snapshot's in-flight count. Each kind of call composes its chain in
 * one place (backend-route.ts for calls made for a client request, task-calls.ts for calls
 * about a task record).
 *
 * Not undici's own interceptors: those wrap `dispatch`, below its request API, where a layer can
 * neither wait for a token exchange, nor reach the JSON-RPC body before it is serialised (the
 * trace context goes in `params._meta` too), nor last until the reply has been read (the span
 * and the in-flight count do). A layer here wraps the whole exchange: the request, and the
 * caller's reading of its reply (`read`).
 */
import type { Dispatcher } from 'undici';
import type { InFlight } from '../lifecycle/in-flight.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { Instance, InstancePool } from '../routing/balancer.js';
import type { TaskCallSpan } from '../tracing/task-calls.js';
import { classifyUpstreamError } from './upstream-failure.js';

/** How long a call the gateway makes on nobody's time waits for headers, and between body chunks: a task's cancel or poll, a probe. */
export const GATEWAY_CALL_TIMEOUT_MS = 10_000;

/** A JSON-RPC message the gateway sends: a request, a notification, or its answer to a backend's request. */
export type OutgoingMessage = JsonObject & { readonly jsonrpc: '2.0' };

export interface GatewayRequest {
  /** POST unless said otherwise (a 2025 session is ended with DELETE). */
  readonly method?: 'POST' | 'DELETE';
  readonly headers: Readonly<Record<string, string>>;
  /** What a POST carries: serialised when it is sent, after the layers (the trace context in its params._meta). */
  readonly message?: OutgoingMessage;
  readonly signal?: Dispatcher.RequestOptions['signal'];
  /** undici's timers for this request; unset, the kind's (timeLimits), else the agent's. */
  readonly headersTimeout?: number;
  readonly bodyTimeout?: number;
}

/** The caller's reading of the reply: what the exchange resolves with. */
export type ReadReply<T> = (reply: Dispatcher.ResponseData) => Promise<T>;
export type Send = <T>(request: GatewayRequest, read: ReadReply<T>) => Promise<T>;
/** One cross-cutting behaviour wrapped around a send. */
export type SendLayer = (next: Send) => Send;

/**
 * The way to one instance for calls that outlive the request that opened it (a gateway-run
 * task's call, its notices, its later rounds): headers fit for the upstream once, credentials
 * included, and the bare send (each call sets its own time limits).
 */
export interface UpstreamChannel {
  /** The instance's origin. */
  readonly origin: string;
  /** Complete request headers (protocol, session, credentials): what the backend gets. */
  readonly headers: Readonly<Record<string, string>>;
  readonly send: Send;
  /**
   * Keeps the policy snapshot the channel's agent belongs to open (src/lifecycle/in-flight.ts)
   * until the function it returns is called: a reload must not close the agent under a call.
   */
  readonly hold: () => () => void;
}

/** What a JSON-RPC POST says it is and reads; a request's own headers may say otherwise. */
const JSON_RPC_POST: Readonly<Record<string, string>> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** The bottom of every chain: one undici request to `origin` and `path` through `agent`, its reply handed to `read`. */
export function sendThrough(agent: Dispatcher, origin: string, path: string): Send {
  return async (request, read) => {
    const message = request.message;
    const reply = await agent.request({
      origin,
      path,
      method: request.method ?? 'POST',
      headers: message ? { ...JSON_RPC_POST, ...request.headers } : request.headers,
      body: message && JSON.stringify(message),
      signal: request.signal,
      headersTimeout: request.headersTimeout,
      bodyTimeout: request.bodyTimeout,
    });
    return read(reply);
  };
}

/** `send` wrapped in `layers`, each around the ones before it: the last runs first (as Dispatcher.compose). */
export function composeSend(send: Send, ...layers: readonly (SendLayer | undefined)[]): Send {
  let composed = send;
  for (const layer of layers) if (layer) composed = layer(composed);
  return composed;
}

/**
 * An instance that refused the connection (nothing reached it) is marked refused in its pool,
 * so that new work skips it for the upstream's cooldown.
 */
export function coolsDownWhenRefused(pool: InstancePool, instance: Instance): SendLayer {
  return (next) => async (request, read) => {
    try {
      return await next(request, read);
    } catch (error) {
      if (classifyUpstreamError(error) === 'refused') pool.markRefused(instance);
      throw error;
    }
  };
}

/** The kind's time limits, for a request that sets none of its own (0 turns undici's timer off). */
export function timeLimits(headersMs: number, bodyMs: number): SendLayer {
  return (next) => (request, read) =>
    next({ ...request, headersTimeout: request.headersTimeout ?? headersMs, bodyTimeout: request.bodyTimeout ?? bodyMs }, read);
}

/**
 * Credentials obtained for each request, over its headers (a task owner's cached token
 * exchange: when none is left it rejects, and nothing is sent).
 */
export function credentials(headersOf: () => Promise<Readonly<Record<string, string>>>): SendLayer {
  return (next) => async (request, read) => next({ ...request, headers: { ...request.headers, ...(await headersOf()) } }, read);
}

/**
 * With tracing on, `span`'s context in every request's headers (traceparent, tracestate) and
 * in the `_meta` of a JSON-RPC request's params (not of a notification or an answer, which
 * belong to a call already traced).
 */
export function traceContext(span: TaskCallSpan | undefined): SendLayer | undefined {
  if (!span) return undefined;
  return (next) => (request, read) => {
    const headers = { ...request.headers };
    span.injectHeaders(headers);
    return next({ ...request, headers, message: request.message && withTraceMeta(request.message, span) }, read);
  };
}

function withTraceMeta(message: OutgoingMessage, span: TaskCallSpan): OutgoingMessage {
  if (typeof message.method !== 'string' || !('id' in message)) return message;
  if (message.params !== undefined && !isObject(message.params)) return message;
  // Copies: the caller's params and _meta stay as it built them.
  const params: JsonObject = { ...message.params };
  if (isObject(params._meta)) params._meta = { ...params._meta };
  span.injectMeta(params);
  return { ...message, params };
}

/**
 * `span` ended with the call: the backend's status once its reply came, the failure when there
 * was none or it could not be read (error.type: the error's code).
 */
export function spanOutcome(span: TaskCallSpan | undefined): SendLayer | undefined {
  if (!span) return undefined;
  return (next) => async (request, read) => {
    try {
      return await next(request, (reply) => {
        span.responded(reply.statusCode);
        return read(reply);
      });
    } catch (error) {
      span.failed((error as { code?: string }).code ?? 'other');
      throw error;
    } finally {
      span.end();
    }
  };
}

/** Counted in the policy snapshot's work (src/lifecycle/in-flight.ts) until its reply is read: a reload closes no agent under it. */
export function heldIn(inFlight: InFlight): SendLayer {
  return (next) => async (request, read) => {
    const leave = inFlight.enter();
    try {
      return await next(request, read);
    } finally {
      leave();
    }
  };
}
