/**
 * The undici dispatchers behind the upstreams: an UpstreamAgent per upstream (keep-alive
 * pools per instance, the upstream's timeouts), and the RouteDispatcher that
 * @fastify/http-proxy is registered with.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Agent, Dispatcher } from 'undici';
import type { ClientAbort } from './client-abort.js';

export interface UpstreamTimeouts {
  connectMs: number;
  headersMs: number;
  /** 0 disables the idle timer between body chunks (long SSE streams). */
  bodyMs: number;
}

export class UpstreamAgent extends Agent {
  constructor(timeouts: UpstreamTimeouts, connectionsPerInstance: number) {
    super({
      connections: connectionsPerInstance,
      connect: { timeout: timeouts.connectMs },
      headersTimeout: timeouts.headersMs,
      bodyTimeout: timeouts.bodyMs,
    });
  }
}

/** What a request relayed through reply-from is sent with: its route's agent and its client's abort. */
export interface RelayedCall {
  readonly agent: UpstreamAgent;
  readonly signal: ClientAbort;
}

type RequestOptions = Dispatcher.RequestOptions;

/**
 * The one dispatcher @fastify/http-proxy (reply-from) is registered with, for the requests it
 * relays (GET streams, DELETE, other methods; JSON-RPC POSTs go through BackendRoute.forward).
 *
 * reply-from takes its dispatcher once, at registration, but each route's upstream has an agent
 * of its own and the routes come from the current policy snapshot; and it passes no abort
 * signal, so an upstream request would run on after its client left until the upstream
 * answered. None of its documented options carries a per-request dispatcher or signal
 * (`undici` is fixed at registration; `getUpstream` and `rewriteRequestHeaders` return a URL and
 * headers). So the pipeline runs `reply.from()` inside `relay(call, …)`, and this dispatcher
 * reads the call from Node's AsyncLocalStorage: reply-from dispatches within that call (its
 * retries on a timer too, which keeps the async context), and nothing of ours travels in its
 * arguments. It owns no connections, so closing it closes nothing (the agents close with their
 * snapshot).
 */
export class RouteDispatcher extends Dispatcher {
  private readonly calls = new AsyncLocalStorage<RelayedCall>();

  /** Runs `send` (a reply.from) so that what it dispatches goes with `call`'s agent and signal. */
  relay<T>(call: RelayedCall, send: () => T): T {
    return this.calls.run(call, send);
  }

  // The overload set of Dispatcher#request (promise and callback forms) cannot be restated
  // in a subclass without widening it, so the override is typed loosely and narrowed inside.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override request(options: RequestOptions, callback?: any): any {
    const call = this.current();
    const signal = call.signal;
    const sent = { ...options, signal };
    if (typeof callback !== 'function') return call.agent.request(sent);
    const answer = callback as (error: Error | null, data?: unknown) => void;
    // The client hung up: reply-from would log the abort as a failed upstream request (warn),
    // and there is nobody to answer. The hang-up has its own line (pipeline/mcp-routes.ts).
    return call.agent.request(sent, (error: Error | null, data?: unknown) => {
      if (error && signal.aborted) return;
      answer(error, data as Dispatcher.ResponseData);
    });
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.current().agent.dispatch(options, handler);
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

  private current(): RelayedCall {
    const call = this.calls.getStore();
    // Every request reply-from sends is sent from within relay(); this is a defect.
    if (!call) throw new Error('upstream request outside RouteDispatcher.relay');
    return call;
  }
}
