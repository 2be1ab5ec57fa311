/**
 * The undici dispatcher behind each upstream: keep-alive pools per instance, the upstream's
 * timeouts, and cancellation tied to the client's connection.
 *
 * @fastify/reply-from calls `dispatcher.request(opts, callback)` without an AbortSignal, so
 * an upstream request would run on after its client left until the upstream answered. The
 * gateway passes each client request's ClientAbort (an emitter undici accepts as a signal)
 * through a symbol-keyed property on the request headers (reply-from copies headers with
 * Object.assign, which keeps own symbol properties) and this Agent moves it to `opts.signal`,
 * where undici's request API honours it. Symbol keys never reach the wire: undici serialises
 * string keys only, and the property is removed before dispatch anyway. (JSON-RPC POSTs are
 * sent by forwardBody, which passes the signal itself.)
 */
import { Agent, Dispatcher } from 'undici';
import type { ClientAbort } from './client-abort.js';

export const kClientSignal = Symbol('taskgate.clientSignal');

export interface UpstreamTimeouts {
  connectMs: number;
  headersMs: number;
  /** 0 disables the idle timer between body chunks (long SSE streams). */
  bodyMs: number;
}

type RequestOptions = Dispatcher.RequestOptions;

export class UpstreamAgent extends Agent {
  constructor(timeouts: UpstreamTimeouts, connectionsPerInstance: number) {
    super({
      connections: connectionsPerInstance,
      connect: { timeout: timeouts.connectMs },
      headersTimeout: timeouts.headersMs,
      bodyTimeout: timeouts.bodyMs,
    });
  }

  // The overload set of Dispatcher#request (promise and callback forms) cannot be restated
  // in a subclass without widening it, so the override is typed loosely and narrowed inside.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override request(options: RequestOptions, callback?: any): any {
    const headers = options.headers as Record<string | symbol, unknown> | undefined;
    const signal = headers?.[kClientSignal] as ClientAbort | undefined;
    if (headers && signal) {
      delete headers[kClientSignal];
      options = { ...options, signal };
      if (typeof callback === 'function') {
        const answer = callback as (error: Error | null, data?: unknown) => void;
        // The client hung up: reply-from would log the abort as a failed upstream request
        // (warn), and there is nobody to answer. The hang-up has its own line (proxy-route.ts).
        callback = (error: Error | null, data?: unknown) => {
          if (error && signal.aborted) return;
          answer(error, data);
        };
      }
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return callback ? super.request(options, callback) : (super.request as any)(options);
  }
}

/** Carries the upstream's agent from buildUpstreamRequestHeaders to RouteDispatcher, like kClientSignal. */
export const kUpstreamAgent = Symbol('taskgate.upstreamAgent');

/**
 * The one dispatcher @fastify/http-proxy (reply-from) is registered with. reply-from takes its
 * dispatcher once, at registration, but each route's upstream has an agent of its own, and the
 * routes come from the current policy snapshot, not from registration: this hands each
 * request to the agent its route chose. It owns no connections, so closing it closes nothing
 * (the agents close with their snapshot).
 */
export class RouteDispatcher extends Dispatcher {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override request(options: RequestOptions, callback?: any): any {
    return agentOf(options).request(options, callback);
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return agentOf(options).dispatch(options, handler);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override close(callback?: any): any {
    if (typeof callback === 'function') queueMicrotask(callback);
    else return Promise.resolve();
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override destroy(...args: any[]): any {
    const callback = args.find((arg) => typeof arg === 'function') as (() => void) | undefined;
    if (callback) queueMicrotask(callback);
    else return Promise.resolve();
  }
}

function agentOf(options: { headers?: unknown }): UpstreamAgent {
  const headers = options.headers as Record<symbol, unknown> | undefined;
  const agent = headers?.[kUpstreamAgent] as UpstreamAgent | undefined;
  // Every request reply-from sends went through buildUpstreamRequestHeaders; this is a defect.
  if (!agent) throw new Error('upstream request without its route\'s agent');
  delete headers![kUpstreamAgent];
  return agent;
}
