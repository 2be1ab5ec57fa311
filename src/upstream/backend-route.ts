/**
 * One route's way to its backends under one policy: the door every backend call of a request
 * on that route goes through, whoever makes it (the forward of the client's own request, a
 * gateway-run task's call, a bridged call, an upstream listen, a generation probe). Built once
 * per route by the policy snapshot; it holds what a call needs and adds what every call carries
 * once: the client's headers made fit for the upstream with the route's credentials
 * (`headersFor`), a token exchanged for the caller (`prepareCredentials`), the upstream's
 * agent (keep-alive pools and timeouts), the route's call timeout, and the snapshot's in-flight
 * count, so a reload never closes an agent under a call. The gateway's own calls are composed
 * here from gateway-send.ts's layers, one chain per kind: `call` (an exchange for a client
 * request), `open` (a stream for a client request), `channelTo` (a gateway-run task's calls),
 * `asGateway` (calls for no one).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/index.js';
import type { InFlight } from '../lifecycle/in-flight.js';
import { replaceRelayedCorsHeaders } from '../listener/cors.js';
import type { Instance, InstancePool } from '../routing/balancer.js';
import type { SessionPolicy } from '../routing/route-stage.js';
import type { Tracing } from '../tracing/tracing.js';
import type { SubjectToken } from '../auth/subject-token.js';
import type { Principal } from '../task-model/principal.js';
import type { RequestTrace } from '../tracing/request-trace.js';
import { applyUpstreamCredentials, type CredentialsPolicy } from './credentials/credentials-policy.js';
import type { UpstreamAgent } from './dispatcher.js';
import {
  composeSend,
  coolsDownWhenRefused,
  credentials,
  GATEWAY_CALL_TIMEOUT_MS,
  heldIn,
  sendThrough,
  timeLimits,
  type GatewayRequest,
  type ReadReply,
  type Send,
  type UpstreamChannel,
} from './gateway-send.js';

/**
 * The client request a backend call is made for, as the door to the backends reads it: whose
 * credentials the call carries (the route's, the principal's identity headers, or a token
 * exchanged for the caller), the client's headers made fit for the upstream, and the request's
 * trace. The pipeline keeps one per request (src/pipeline/exchange.ts); capabilities pass it on
 * when they call a backend for that request.
 */
export interface Caller {
  readonly route: BackendRoute;
  /** The client's headers, as received. */
  readonly clientHeaders: IncomingHttpHeaders;
  /** The address of the peer that connected (X-Forwarded-For is extended with it). */
  readonly peerAddress: string;
  /** The client-facing protocol, http or https (X-Forwarded-Proto). */
  readonly protocol: string;
  readonly requestId: string;
  /** The verified caller; undefined when the policy runs without authentication (auth.mode none). */
  readonly principal?: Principal;
  /** Opaque, stable key of the principal (auth.principalKey), what task ownership compares. */
  readonly principalKey?: string;
  /** The client's verified token, for a token exchange only; never logged, never forwarded. */
  readonly subjectToken?: SubjectToken;
  /** The token obtained for this request's upstream (credentials type token-exchange). */
  upstreamToken?: string;
  /** Headers sent upstream in place of the client's (a task's own session or id); null removes. */
  upstreamHeaders?: Record<string, string | null>;
  /** This request's spans; undefined with tracing off (src/tracing/). */
  readonly trace?: RequestTrace;
}

export interface BackendRouteOptions {
  /** The client-facing path from the policy (a bounded metric label). */
  readonly path: string;
  readonly upstreamPath: string;
  readonly pool: InstancePool;
  readonly agent: UpstreamAgent;
  readonly credentials: CredentialsPolicy;
  readonly upstream: UpstreamConfig;
  readonly limits: { readonly maxResponseBytes: number; readonly maxSseEventBytes: number };
  readonly sessions: SessionPolicy;
  /** The policy snapshot's count of running work. */
  readonly inFlight: InFlight;
  readonly tracing: Tracing | undefined;
  /** listen.trustProxy: whether X-Forwarded-* from the client are believed and extended. */
  readonly trustProxy: boolean;
  /** Whether the gateway answers CORS itself (listen.cors), so the backend's Access-Control-* go. */
  readonly cors: boolean;
  /** This route's child of taskgate_upstream_headers_seconds, made once. */
  readonly upstreamHeadersDuration: { observe(seconds: number): void };
}

const HOP_BY_HOP = ['keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'upgrade'];

/**
 * The tasks stage sends a task's own session or backend id instead of the client's. Only
 * these names may be overridden, and credentials are applied after, so an override can
 * never carry a credential upstream.
 */
const OVERRIDABLE = new Set(['mcp-session-id', 'mcp-name']);

export class BackendRoute {
  readonly path: string;
  readonly upstreamPath: string;
  readonly pool: InstancePool;
  readonly agent: UpstreamAgent;
  readonly credentials: CredentialsPolicy;
  /** The upstream's part of the policy (what its capabilities read: providedTasks, backgroundCalls, bridge). */
  readonly config: UpstreamConfig;
  readonly limits: BackendRouteOptions['limits'];
  readonly sessions: SessionPolicy;
  readonly inFlight: InFlight;
  readonly tracing: Tracing | undefined;
  readonly upstreamHeadersDuration: BackendRouteOptions['upstreamHeadersDuration'];
  /** Each instance's origin, parsed once. */
  readonly endpoints: ReadonlyMap<string, URL>;
  /** The upstream path and any query string of the route's upstreamPath, split once. */
  readonly upstreamTarget: URL;
  /** How long a call the gateway makes for a client may wait for its whole answer. */
  readonly callTimeoutMs: number;
  private readonly trustProxy: boolean;
  private readonly cors: boolean;

  constructor(options: BackendRouteOptions) {
    this.path = options.path;
    this.upstreamPath = options.upstreamPath;
    this.pool = options.pool;
    this.agent = options.agent;
    this.credentials = options.credentials;
    this.config = options.upstream;
    this.limits = options.limits;
    this.sessions = options.sessions;
    this.inFlight = options.inFlight;
    this.tracing = options.tracing;
    this.upstreamHeadersDuration = options.upstreamHeadersDuration;
    this.trustProxy = options.trustProxy;
    this.cors = options.cors;
    this.endpoints = new Map(options.pool.instances.map((instance) => [instance.url, new URL(instance.url)]));
    this.upstreamTarget = new URL(options.upstreamPath, 'http://upstream.invalid');
    this.callTimeoutMs = options.upstream.timeouts.headers + options.upstream.timeouts.body;
  }

  /** The upstream's name. */
  get upstream(): string {
    return this.pool.upstream;
  }

  /** The origin of an instance of this route's upstream, parsed once. */
  endpointOf(instance: Instance | string): URL {
    const url = typeof instance === 'string' ? instance : instance.url;
    return this.endpoints.get(url) ?? new URL(url);
  }

  /** The path every call on this route is sent to (the upstreamPath, with its query). */
  get targetPath(): string {
    return this.upstreamTarget.pathname + this.upstreamTarget.search;
  }

  /**
   * `headers` (a copy of the client's) made fit for the upstream, in place: the remaining
   * hop-by-hop headers go, the tasks stage's overrides apply, the client's Authorization and
   * identity headers go and the route's upstream credentials come, X-Forwarded-* describe the
   * client (extended only when listen.trustProxy says the client's can be believed).
   */
  headersFor(caller: Caller, headers: IncomingHttpHeaders): IncomingHttpHeaders {
    for (const name of HOP_BY_HOP) delete headers[name];
    // `Expect: 100-continue` was answered by this server (Node sends the 100) before the body was
    // read; the forwarded request carries the whole body, and undici refuses the header outright,
    // which made every such request (curl sends it for bodies over 1 KiB) a 502.
    delete headers.expect;
    const overrides = caller.upstreamHeaders;
    if (overrides) {
      for (const [name, value] of Object.entries(overrides)) {
        if (!OVERRIDABLE.has(name)) continue;
        if (value === null) delete headers[name];
        else headers[name] = value;
      }
    }
    applyUpstreamCredentials(headers, this.credentials, caller.principal, caller.upstreamToken);
    const trust = this.trustProxy;
    const priorFor = trust ? headers['x-forwarded-for'] : undefined;
    headers['x-forwarded-for'] = priorFor ? `${String(priorFor)}, ${caller.peerAddress}` : caller.peerAddress;
    headers['x-forwarded-proto'] = trust ? (headers['x-forwarded-proto'] ?? caller.protocol) : caller.protocol;
    headers['x-forwarded-host'] = trust ? (headers['x-forwarded-host'] ?? caller.clientHeaders.host) : caller.clientHeaders.host;
    if (!trust) delete headers.forwarded;
    headers['x-request-id'] = caller.requestId;
    return headers;
  }

  /**
   * The client's headers (a copy) as a call of the gateway's for `caller` sends them to
   * `instance`, without the protocol's own (`mcp-*`, Last-Event-ID; the caller sets those for
   * the generation it speaks), fit for the upstream and flat.
   */
  callHeadersFor(caller: Caller, instance: Instance): Record<string, string> {
    const headers = copyRequestHeaders(caller.clientHeaders);
    for (const name of Object.keys(headers)) if (name.startsWith('mcp-') || name === 'last-event-id') delete headers[name];
    const fit = this.headersForCall(caller, instance, headers);
    // headersFor applies the tasks stage's overrides: none belongs here.
    delete fit['mcp-session-id'];
    delete fit['mcp-name'];
    return fit;
  }

  /** `headers` (a copy the caller made) as a call of the gateway's for `caller` sends them to `instance`: fit for the upstream and flat. */
  private headersForCall(caller: Caller, instance: Instance, headers: IncomingHttpHeaders): Record<string, string> {
    headers.host = this.endpointOf(instance).host;
    // The call's own body is sent, and undici measures it.
    delete headers['content-length'];
    this.headersFor(caller, headers);
    return flatHeaders(headers);
  }

  /**
   * One JSON-RPC exchange of the gateway's with `instance` for `caller` (the bridge's calls),
   * its reply read by `read`: the client's headers without its protocol ones, fit for the
   * upstream (callHeadersFor), under the request's own; the route's call timeout unless the
   * request sets its own; counted in the snapshot's work until the reply is read.
   */
  call<T>(caller: Caller, instance: Instance, request: GatewayRequest, read: ReadReply<T>): Promise<T> {
    const send = composeSend(this.sendTo(instance), timeLimits(this.callTimeoutMs, this.callTimeoutMs), heldIn(this.inFlight));
    return send({ ...request, headers: { ...this.callHeadersFor(caller, instance), ...request.headers } }, read);
  }

  /**
   * Opens a stream of `instance`'s that the caller reads for as long as it lasts (a listen
   * relayed for the client): the client's headers fit for the upstream, the request's over
   * them, and the upstream's own timeouts. Not counted apart: the client's request it is opened
   * for holds the snapshot until its response ends.
   */
  open(caller: Caller, instance: Instance, request: GatewayRequest): Promise<Dispatcher.ResponseData> {
    const headers = this.headersForCall(caller, instance, { ...copyRequestHeaders(caller.clientHeaders), ...request.headers });
    return this.sendTo(instance)({ ...request, headers }, async (reply) => reply);
  }

  /**
   * The channel of a gateway-run task's calls to `instance` (src/provided/): `headers`, the ones
   * the call is sent with, made fit for the upstream once for `caller` (credentials included),
   * so that the call's notices and its later rounds carry them when the client's request is
   * gone. Each call sets its own time limit; the task holds the snapshot (`hold`) while it runs.
   */
  channelTo(caller: Caller, instance: Instance, headers: IncomingHttpHeaders): UpstreamChannel {
    const inFlight = this.inFlight;
    return { origin: this.endpointOf(instance).origin, headers: this.headersForCall(caller, instance, headers), send: this.sendTo(instance), hold: () => inFlight.enter() };
  }

  /**
   * What the gateway sends `instance` for itself, speaking for no caller (the generation
   * probes): the route's own credentials (a static bearer; identity headers and exchanged
   * tokens speak for a caller, so none) and the gateway's call timeout.
   */
  asGateway(instance: Instance | string): Send {
    const own: IncomingHttpHeaders = {};
    applyUpstreamCredentials(own, this.credentials, undefined);
    const headers = flatHeaders(own);
    return composeSend(this.sendTo(instance), timeLimits(GATEWAY_CALL_TIMEOUT_MS, GATEWAY_CALL_TIMEOUT_MS), credentials(async () => headers));
  }

  /**
   * The bottom of every call of the gateway's to `instance` on this route: the agent, the
   * origin, the route's upstream path; an instance that refuses the connection cools down for
   * new work, as it does when a client's own request finds it refusing (pipeline/forward.ts).
   */
  private sendTo(instance: Instance | string): Send {
    const known = typeof instance === 'string' ? this.pool.findInstance(instance) : instance;
    return composeSend(sendThrough(this.agent, this.endpointOf(instance).origin, this.targetPath), known && coolsDownWhenRefused(this.pool, known));
  }

  /** The upstream's response headers made fit for the client, in place. */
  clientHeadersOf(headers: IncomingHttpHeaders, requestId: string | undefined): IncomingHttpHeaders {
    for (const name of HOP_BY_HOP) delete headers[name];
    delete headers.connection;
    if (requestId !== undefined) headers['x-request-id'] = requestId;
    // With CORS on, the gateway's Access-Control-* were set when the request arrived.
    if (this.cors) replaceRelayedCorsHeaders(headers);
    return headers;
  }

  /**
   * Sends a client's own request (the forward) to `instance`: the client's body, or the tasks
   * stage's rewrite of it, with headers already made fit (headersFor). Callback style, with
   * the agent's timeouts: this is the path every forwarded JSON-RPC message takes, and a
   * promise here cost a microtask turn per request. `query` is the client's query string when
   * the route's upstreamPath has none of its own.
   */
  forward(
    instance: Instance,
    request: { readonly headers: IncomingHttpHeaders; readonly body: Buffer; readonly query: string; readonly signal: Dispatcher.RequestOptions['signal'] },
    callback: (error: Error | null, data: Dispatcher.ResponseData) => void,
  ): void {
    const query = this.upstreamTarget.search || request.query;
    this.agent.request(
      { origin: this.endpointOf(instance).origin, path: this.upstreamTarget.pathname + query, method: 'POST', headers: request.headers, body: request.body, signal: request.signal },
      callback,
    );
  }

  /**
   * A caller about to reach a token-exchange upstream gets its token now (caller.upstreamToken).
   * A refusal or an unreachable authorization server rejects with the client's answer, and
   * nothing reaches the upstream. Undefined (nothing to wait for) on every other upstream: no
   * promise on the common path.
   */
  prepareCredentials(caller: Caller, options: { refresh?: boolean } = {}): Promise<void> | undefined {
    const exchanger = this.credentials.exchanger;
    if (!exchanger) return undefined;
    return exchanger.tokenFor(caller, options).then((token) => {
      caller.upstreamToken = token;
    });
  }
}

/**
 * The client's headers as reply-from copies them for the upstream: without `connection`, the
 * names it lists and `transfer-encoding`. The caller sets Host, length and type for the body it
 * sends; the rest of the hop-by-hop headers go in BackendRoute.headersFor.
 */
export function copyRequestHeaders(incoming: IncomingHttpHeaders): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...incoming };
  const listed = headers.connection;
  if (typeof listed === 'string') {
    for (const name of listed.split(',')) {
      const trimmed = name.trim().toLowerCase();
      if (trimmed) delete headers[trimmed];
    }
  }
  delete headers.connection;
  delete headers['transfer-encoding'];
  return headers;
}

/** Headers with one string value each (undici's form); multi-valued and absent ones are left out. */
export function flatHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (typeof value === 'string') flat[name] = value;
  return flat;
}
