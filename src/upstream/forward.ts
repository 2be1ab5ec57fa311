/**
 * The `upstream` stage (DESIGN.md §2, step 6): the request goes to the instance the routing
 * stage chose, and failures before any answer become the catalogue's 502/503/504 (with
 * fail-over of new work to another instance when the chosen one refused the connection).
 *
 * A JSON-RPC POST (parsed by the mcp stage; every POST reaches the upstream this way) goes with
 * undici's request API directly. reply-from's way there resolves and validates a destination
 * URL the gateway already chose and copies headers it then rewrites: several µs per request on
 * the path every task operation takes. What reply-from does that matters is done here the same
 * way: hop-by-hop and Connection-listed headers dropped, Host set to the upstream, the body's
 * length, the client's query string kept unless upstreamPath has one, and the same header
 * rewriting, abort signal, timeouts (the agent's) and error handling. Everything else (GET
 * streams, DELETE, other methods) goes through @fastify/http-proxy's reply-from.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyReplyFromHooks } from '@fastify/reply-from';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.js';
import { sendGatewayError, toGatewayError } from '../listener/error-reply.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { canFailOver } from '../routing/route-stage.js';
import { kClientSignal, kUpstreamAgent } from './dispatcher.js';
import { buildClientResponseHeaders, buildUpstreamRequestHeaders, copyRequestHeaders } from './forward-headers.js';
import { handleCredentialRefusal, isCredentialRefusal } from './upstream-refusal.js';

/** The upstream's answer, as the way back receives it. */
export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  stream: NodeJS.ReadableStream & { destroy(error?: Error): void };
}

/** The way back (src/pipeline/way-back.ts), handed in: this stage only sends and receives. */
export type RelayResponse = (request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse) => Promise<void>;

export interface ForwardDeps {
  readonly metrics: GatewayMetrics;
  readonly relay: RelayResponse;
}

type ReplyFromOptions = FastifyReplyFromHooks & { body?: Buffer; contentType?: string };

export type Forward = (request: FastifyRequest, reply: FastifyReply) => void;

export function createForwarder(deps: ForwardDeps): Forward {
  const relay = (request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse) => {
    // Never an unhandled rejection: whatever goes wrong while relaying becomes an answer.
    deps.relay(request, reply, res).catch((error: unknown) => {
      res.stream.destroy();
      sendGatewayError(request, reply, toGatewayError(error));
    });
  };

  const forwardBody = (request: FastifyRequest, reply: FastifyReply, clientBody: Buffer): void => {
    const tg = request.exchange;
    const { route } = tg;
    const endpoint = route.endpoints.get(tg.instance!.url) ?? new URL(tg.instance!.url);
    const headers = copyRequestHeaders(request.headers);
    // With tracing on, the call's span context goes into the headers and the body's _meta.
    const body = tg.trace === undefined ? clientBody : tg.trace.startUpstreamCall(headers, endpoint, clientBody)!;
    headers.host = endpoint.host;
    headers['content-length'] = String(body.length);
    headers['content-type'] = request.headers['content-type'] ?? 'application/json';
    buildUpstreamRequestHeaders(request, headers);
    const queryAt = request.url.indexOf('?');
    const query = route.upstreamTarget.search || (queryAt > 0 ? request.url.slice(queryAt) : '');
    tg.upstreamStartedAt = process.hrtime.bigint();
    // A 2025 tools/call holding a concurrency slot outlives a client that hangs up (src/limits/call-hold.ts).
    const hold = tg.callHold;
    const ended = hold?.begin();
    route.agent.request(
      { origin: endpoint.origin, path: route.upstreamTarget.pathname + query, method: 'POST', headers, body, signal: hold?.signal ?? tg.abort },
      (error: Error | null, data: Dispatcher.ResponseData) => {
        if (error) {
          ended?.();
          handleUpstreamError(request, reply, error);
          return;
        }
        // 'close' follows the end, an error and a destroy alike.
        if (ended) data.body.once('close', ended);
        const responseHeaders = data.headers as Record<string, string | string[] | undefined>;
        delete responseHeaders['transfer-encoding'];
        if (tg.abort.aborted) {
          // Nobody to answer. A held call's answer is still read to its end (and dropped).
          if (hold) data.body.resume();
          else data.body.destroy();
          return;
        }
        if (isCredentialRefusal(data.statusCode)) {
          data.body.destroy();
          handleCredentialRefusal(request, reply, data.statusCode, deps.metrics, () => forwardBody(request, reply, body));
          return;
        }
        // This callback runs outside fastify's promise chain: nothing may throw out of it.
        try {
          reply.headers(buildClientResponseHeaders(responseHeaders, request));
          reply.code(data.statusCode);
        } catch (invalid) {
          data.body.destroy();
          sendGatewayError(request, reply, new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'upstream status or headers cannot be relayed', cause: invalid }));
          return;
        }
        relay(request, reply, { statusCode: data.statusCode, headers: responseHeaders, stream: data.body });
      },
    );
  };

  const forward: Forward = (request, reply) => {
    // Nothing goes upstream for a request the preHandler answered, or whose client has left
    // (a local answer cut short by a hang-up still ends the preHandler, and fastify then runs
    // the handler: docs/security.md, "Client hang-ups").
    if (request.exchange.answeredLocally || request.exchange.abort.aborted) return;
    const body = request.exchange.mcp?.body;
    if (body && request.method === 'POST') {
      forwardBody(request, reply, body);
      return;
    }
    const hooks: ReplyFromOptions = {
      getUpstream: (req) => (req as FastifyRequest).exchange.instance!.url,
      rewriteRequestHeaders: (req, headers) => {
        const tg = (req as FastifyRequest).exchange;
        const built = buildUpstreamRequestHeaders(req as FastifyRequest, headers) as Record<symbol, unknown>;
        tg.trace?.startUpstreamCall(built as IncomingHttpHeaders, tg.route.endpoints.get(tg.instance!.url) ?? new URL(tg.instance!.url));
        // reply-from has one dispatcher for every route (RouteDispatcher); it takes this agent,
        // and UpstreamAgent hands the client's abort to undici as the request's signal.
        built[kUpstreamAgent] = tg.route.agent;
        built[kClientSignal] = tg.abort;
        return built as IncomingHttpHeaders;
      },
      rewriteHeaders: (headers, req) => buildClientResponseHeaders(headers, req as FastifyRequest | undefined),
      onResponse: (req, rep, res) => {
        const response = res as unknown as UpstreamResponse;
        if (!isCredentialRefusal(response.statusCode)) return relay(req as FastifyRequest, rep as FastifyReply, response);
        response.stream.destroy();
        handleCredentialRefusal(req as FastifyRequest, rep as FastifyReply, response.statusCode, deps.metrics);
      },
      onError: (rep, { error }) => handleUpstreamError(request, rep as FastifyReply, error),
    };
    if (request.exchange.mcp) {
      hooks.body = request.exchange.mcp.body;
      hooks.contentType = request.headers['content-type'] ?? 'application/json';
    }
    request.exchange.upstreamStartedAt = process.hrtime.bigint();
    reply.from(request.exchange.route.upstreamPath, hooks);
  };

  const handleUpstreamError = (request: FastifyRequest, reply: FastifyReply, error: Error): void => {
    const tg = request.exchange;
    if (tg.abort.aborted) return; // the client left; nobody to answer
    const { pool } = tg.route;
    const kind = classifyUpstreamError(error);
    deps.metrics.upstreamErrors.inc({ upstream: pool.upstream, kind });
    tg.trace?.upstreamFailed(kind);
    if (kind === 'refused' && tg.instance) {
      pool.markRefused(tg.instance);
      request.log.warn({ instance: tg.instance.url, upstream: pool.upstream }, 'upstream instance refused the connection; cooling down');
      if (canFailOver(tg)) {
        // Nothing reached the refusing instance, so the same bytes may go to another.
        const refused = (tg.refused ??= new Set());
        refused.add(tg.instance.url);
        const next = pool.selectInstance(Date.now(), refused);
        if (next && !refused.has(next.url)) {
          tg.instance = next;
          forward(request, reply);
          return;
        }
      }
    } else {
      request.log.warn({ err: error, instance: tg.instance?.url, upstream: pool.upstream }, 'upstream request failed');
    }
    const code = kind === 'timeout' ? 'TG_ERR_UPSTREAM_TIMEOUT' : kind === 'refused' ? 'TG_ERR_UPSTREAM_UNAVAILABLE' : 'TG_ERR_BAD_GATEWAY';
    sendGatewayError(request, reply, new GatewayError(code, { cause: error }));
  };

  return forward;
}

type UpstreamErrorKind = 'refused' | 'timeout' | 'reset' | 'other';

function classifyUpstreamError(error: Error): UpstreamErrorKind {
  const codes = [(error as { code?: string }).code, ((error as { cause?: { code?: string } }).cause)?.code];
  if (codes.some((c) => c === 'ECONNREFUSED' || c === 'ENOTFOUND' || c === 'EHOSTUNREACH')) return 'refused';
  if (codes.some((c) => c === 'UND_ERR_CONNECT_TIMEOUT' || c === 'UND_ERR_HEADERS_TIMEOUT' || c === 'UND_ERR_BODY_TIMEOUT' || c === 'FST_REPLY_FROM_GATEWAY_TIMEOUT')) return 'timeout';
  if (codes.some((c) => c === 'ECONNRESET' || c === 'UND_ERR_SOCKET')) return 'reset';
  return 'other';
}
