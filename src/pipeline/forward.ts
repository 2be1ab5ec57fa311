/**
 * The handler phase (DESIGN.md §2, step 6): the request goes to the instance the routing
 * stage chose, through its route's door (upstream/backend-route.ts), and failures before any
 * answer become the catalogue's 502/503/504 (with fail-over of new work to another instance
 * when the chosen one refused the connection).
 *
 * A JSON-RPC POST (parsed by the mcp stage; every POST reaches the upstream this way) goes
 * with BackendRoute.forward, undici's request API directly. reply-from's way there resolves and
 * validates a destination URL the gateway already chose and copies headers it then rewrites:
 * several µs per request on the path every task operation takes. What reply-from does that
 * matters is done here the same way: hop-by-hop and Connection-listed headers dropped, Host
 * set to the upstream, the body's length, the client's query string kept unless upstreamPath
 * has one, and the same header rewriting, abort signal, timeouts (the agent's) and error
 * handling. Everything else (GET streams, DELETE, other methods) goes through
 * @fastify/http-proxy's reply-from, with the route's agent and the client's abort signal
 * (upstream/dispatcher.ts says how).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyReplyFromHooks } from '@fastify/reply-from';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { canFailOver } from '../routing/route-stage.js';
import { copyRequestHeaders } from '../upstream/backend-route.js';
import { discardBody } from '../upstream/relay-streams.js';
import type { RouteDispatcher } from '../upstream/dispatcher.js';
import { classifyUpstreamError, isCredentialRefusal, upstreamFailureCode } from '../upstream/upstream-failure.js';
import { handleCredentialRefusal } from './credential-refusal.js';
import { sendGatewayError, toGatewayError } from './error-answer.js';

/** The upstream's answer, as the way back receives it. */
export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  stream: NodeJS.ReadableStream & { destroy(error?: Error): void };
}

/** The way back (src/pipeline/way-back.ts), handed in: this phase only sends and receives. */
export type RelayResponse = (request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse) => Promise<void>;

export interface ForwardDeps {
  readonly metrics: GatewayMetrics;
  readonly relay: RelayResponse;
  /** The dispatcher @fastify/http-proxy was registered with. */
  readonly dispatcher: RouteDispatcher;
}

type ReplyFromOptions = FastifyReplyFromHooks & { body?: Buffer; contentType?: string };

export type Forward = (request: FastifyRequest, reply: FastifyReply) => void;

export function createForwarder(deps: ForwardDeps): Forward {
  const relay = (request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse) => {
    // Never an unhandled rejection: whatever goes wrong while relaying becomes an answer.
    deps.relay(request, reply, res).catch((error: unknown) => {
      discardBody(res.stream);
      sendGatewayError(request, reply, toGatewayError(error));
    });
  };

  const forwardBody = (request: FastifyRequest, reply: FastifyReply, clientBody: Buffer): void => {
    const exchange = request.exchange;
    const { route } = exchange;
    const instance = exchange.instance!;
    const endpoint = route.endpointOf(instance);
    const headers = copyRequestHeaders(request.headers);
    // With tracing on, the call's span context goes into the headers and the body's _meta.
    const body = exchange.trace === undefined ? clientBody : exchange.trace.startUpstreamCall(headers, endpoint, clientBody)!;
    headers.host = endpoint.host;
    headers['content-length'] = String(body.length);
    headers['content-type'] = request.headers['content-type'] ?? 'application/json';
    route.headersFor(exchange, headers);
    const queryAt = request.url.indexOf('?');
    exchange.upstreamStartedAt = process.hrtime.bigint();
    // A 2025 tools/call holding a concurrency slot outlives a client that hangs up (src/limits/call-hold.ts).
    const hold = exchange.callHold;
    const ended = hold?.begin();
    route.forward(instance, { headers, body, query: queryAt > 0 ? request.url.slice(queryAt) : '', signal: hold?.signal ?? exchange.abort }, (error: Error | null, data: Dispatcher.ResponseData) => {
      if (error) {
        ended?.();
        handleUpstreamError(request, reply, error);
        return;
      }
      // 'close' follows the end, an error and a destroy alike.
      if (ended) data.body.once('close', ended);
      const responseHeaders = data.headers as Record<string, string | string[] | undefined>;
      delete responseHeaders['transfer-encoding'];
      if (exchange.abort.aborted) {
        // Nobody to answer. A held call's answer is still read to its end (and dropped).
        if (hold) data.body.resume();
        else discardBody(data.body);
        return;
      }
      if (isCredentialRefusal(data.statusCode)) {
        discardBody(data.body);
        handleCredentialRefusal(request, reply, data.statusCode, deps.metrics, () => forwardBody(request, reply, body));
        return;
      }
      // This callback runs outside fastify's promise chain: nothing may throw out of it.
      try {
        reply.headers(route.clientHeadersOf(responseHeaders, request.id));
        reply.code(data.statusCode);
      } catch (invalid) {
        discardBody(data.body);
        sendGatewayError(request, reply, new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'upstream status or headers cannot be relayed', cause: invalid }));
        return;
      }
      relay(request, reply, { statusCode: data.statusCode, headers: responseHeaders, stream: data.body });
    });
  };

  const forward: Forward = (request, reply) => {
    const exchange = request.exchange;
    // Nothing goes upstream for a request the preHandler answered, or whose client has left
    // (a local answer cut short by a hang-up still ends the preHandler, and fastify then runs
    // the handler: docs/security.md, "Client hang-ups").
    if (exchange.answeredLocally || exchange.abort.aborted) return;
    const body = exchange.mcp?.body;
    if (body && request.method === 'POST') {
      forwardBody(request, reply, body);
      return;
    }
    const hooks: ReplyFromOptions = {
      getUpstream: () => exchange.instance!.url,
      rewriteRequestHeaders: (_req, headers) => {
        const built = exchange.route.headersFor(exchange, headers);
        exchange.trace?.startUpstreamCall(built, exchange.route.endpointOf(exchange.instance!));
        return built;
      },
      rewriteHeaders: (headers: IncomingHttpHeaders) => exchange.route.clientHeadersOf(headers, request.id),
      onResponse: (req, rep, res) => {
        const response = res as unknown as UpstreamResponse;
        if (!isCredentialRefusal(response.statusCode)) return relay(req as FastifyRequest, rep as FastifyReply, response);
        discardBody(response.stream);
        handleCredentialRefusal(req as FastifyRequest, rep as FastifyReply, response.statusCode, deps.metrics);
      },
      onError: (rep, { error }) => handleUpstreamError(request, rep as FastifyReply, error),
    };
    if (exchange.mcp) {
      hooks.body = exchange.mcp.body;
      hooks.contentType = request.headers['content-type'] ?? 'application/json';
    }
    exchange.upstreamStartedAt = process.hrtime.bigint();
    deps.dispatcher.relay({ agent: exchange.route.agent, signal: exchange.abort }, () => reply.from(exchange.route.upstreamPath, hooks));
  };

  const handleUpstreamError = (request: FastifyRequest, reply: FastifyReply, error: Error): void => {
    const exchange = request.exchange;
    if (exchange.abort.aborted) return; // the client left; nobody to answer
    const { pool } = exchange.route;
    const kind = classifyUpstreamError(error);
    deps.metrics.upstreamErrors.inc({ upstream: pool.upstream, kind });
    exchange.trace?.upstreamFailed(kind);
    if (kind === 'refused' && exchange.instance) {
      pool.markRefused(exchange.instance);
      request.log.warn({ instance: exchange.instance.url, upstream: pool.upstream }, 'upstream instance refused the connection; cooling down');
      if (canFailOver(exchange)) {
        // Nothing reached the refusing instance, so the same bytes may go to another.
        const refused = (exchange.refused ??= new Set());
        refused.add(exchange.instance.url);
        const next = pool.selectInstance(Date.now(), refused);
        if (next && !refused.has(next.url)) {
          exchange.instance = next;
          forward(request, reply);
          return;
        }
      }
    } else {
      request.log.warn({ err: error, instance: exchange.instance?.url, upstream: pool.upstream }, 'upstream request failed');
    }
    sendGatewayError(request, reply, new GatewayError(upstreamFailureCode(kind), { cause: error }));
  };

  return forward;
}
