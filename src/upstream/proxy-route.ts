/**
 * One MCP route: the listener checks and the auth stage on request, the mcp and routing
 * stages as a preHandler, and the `upstream` stage: a POST route of our own and undici's
 * request API for JSON-RPC POSTs (forwardBody), @fastify/http-proxy's routes (reply-from over
 * undici) for everything else. Responses
 * come back through relayResponse, where event streams pass through the SSE tap.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import httpProxy from '@fastify/http-proxy';
import type { FastifyReplyFromHooks } from '@fastify/reply-from';
import type { Dispatcher } from 'undici';
import type { RouteAuth } from '../auth/auth-stage.js';
import type { CredentialsPolicy } from '../auth/upstream-credentials.js';
import { GatewayError } from '../errors.js';
import { sendGatewayError, toGatewayError } from '../listener/error-reply.js';
import { checkHostAndOrigin, type HostOriginPolicy } from '../listener/host-origin.js';
import { runMcpStage, sessionIdOf } from '../mcp/mcp-stage.js';
import { rewriteJsonReply } from '../mcp/json-reply.js';
import { isEventStream, isJson } from '../mcp/media-type.js';
import { createSseTap } from '../mcp/sse-tap.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { RouteContext } from '../request-context.js';
import { canFailOver, recordSessionOutcome, selectInstanceFor, type SessionPolicy } from '../routing/route-stage.js';
import type { Store } from '../store/store.js';
import type { TaskDeps } from '../tasks/task-context.js';
import { planTaskRequest } from '../tasks/task-requests.js';
import { createTaskResponseHook } from '../tasks/task-responses.js';
import { ClientAbort } from './client-abort.js';
import type { UpstreamAgent } from './dispatcher.js';
import { buildClientResponseHeaders, buildUpstreamRequestHeaders } from './forward-headers.js';
import { readBounded, relayThrough } from './relay-streams.js';

export interface McpRouteOptions {
  readonly route: RouteContext;
  readonly agent: UpstreamAgent;
  readonly store: Store;
  readonly metrics: GatewayMetrics;
  readonly hostOrigin: HostOriginPolicy;
  /** Undefined when the policy runs without authentication (auth.mode none). */
  readonly auth: RouteAuth | undefined;
  readonly credentials: CredentialsPolicy;
  readonly sessions: SessionPolicy;
  readonly trustProxy: boolean;
  readonly tasks: TaskDeps;
  readonly limits: { maxBodyBytes: number; maxResponseBytes: number; maxSseEventBytes: number; requestTimeoutMs: number };
}

type ReplyFromOptions = FastifyReplyFromHooks & { body?: Buffer; contentType?: string };

export async function registerMcpRoute(app: FastifyInstance, options: McpRouteOptions): Promise<void> {
  const { route, store, metrics } = options;
  // One upstream per route: its label child is made once, not hashed per request.
  const upstreamHeadersDuration = metrics.upstreamHeadersDuration.labels({ upstream: route.pool.upstream });

  await app.register(async (scope) => {
    // Bodies are read once, as bytes, up to the limit: the mcp stage parses them and the
    // same bytes (or a rewrite) are forwarded.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: options.limits.maxBodyBytes }, (_req, body, done) => {
      done(null, body);
    });

    scope.setErrorHandler((error, request, reply) => sendGatewayError(request, reply, toGatewayError(error)));

    scope.addHook('onRequest', async (request, reply) => {
      request.tg = { route, abort: new ClientAbort() };
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) request.tg.abort.abort();
        request.tg.releaseResultWait?.();
      });
      if (options.limits.requestTimeoutMs > 0) armRequestTimeout(request, reply, options.limits.requestTimeoutMs);
      checkHostAndOrigin(options.hostOrigin, request.headers.host, headerValue(request.headers.origin));
      // Authentication comes before the body is even read: an unauthenticated client gets
      // nothing parsed, buffered or forwarded (the mcp stage runs in the preHandler).
      if (options.auth) await options.auth.authenticate(request);
    });

    const preHandler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      runMcpStage(request);
      request.tg.sessionId = sessionIdOf(request);
      // The tasks stage may answer by itself, or pin the request to a task's own instance.
      const answer = await planTaskRequest(options.tasks, request);
      if (answer) {
        await reply.code(answer.status).headers(answer.headers ?? {}).type('application/json').send(answer.body);
        return;
      }
      request.tg.instance ??= await selectInstanceFor(request, store, options.sessions);
    };

    // The upstream path and any query string of the policy's upstreamPath, split once.
    const upstreamTarget = new URL(route.upstreamPath, 'http://upstream.invalid');
    // Each instance's origin and Host, parsed once (instances are fixed by the policy).
    const endpoints = new Map(route.pool.instances.map((instance) => [instance.url, new URL(instance.url)]));

    /**
     * A request whose body the gateway holds (a JSON-RPC POST, parsed by the mcp stage; every
     * POST reaches the upstream this way) goes to the upstream with undici's request API
     * directly. reply-from's way there resolves and validates a destination URL the
     * gateway already chose and copies headers it then rewrites: several µs per request on
     * the path every task operation takes. What reply-from does that matters is done here the
     * same way: hop-by-hop and Connection-listed headers dropped, Host set to the upstream,
     * the body's length, the client's query string kept unless upstreamPath has one, and the
     * same header rewriting, abort signal, timeouts (the agent's) and error handling.
     * Everything else (GET streams, DELETE, other methods) still goes through reply-from.
     */
    const forwardBody = (request: FastifyRequest, reply: FastifyReply, body: Buffer): void => {
      const tg = request.tg;
      const endpoint = endpoints.get(tg.instance!.url) ?? new URL(tg.instance!.url);
      const headers = copyRequestHeaders(request.headers);
      headers.host = endpoint.host;
      headers['content-length'] = String(body.length);
      headers['content-type'] = request.headers['content-type'] ?? 'application/json';
      buildUpstreamRequestHeaders(request, headers, options);
      const queryAt = request.url.indexOf('?');
      const query = upstreamTarget.search || (queryAt > 0 ? request.url.slice(queryAt) : '');
      tg.upstreamStartedAt = process.hrtime.bigint();
      options.agent.request(
        { origin: endpoint.origin, path: upstreamTarget.pathname + query, method: 'POST', headers, body, signal: tg.abort },
        (error: Error | null, data: Dispatcher.ResponseData) => {
          if (error) {
            handleUpstreamError(request, reply, error);
            return;
          }
          const responseHeaders = data.headers as Record<string, string | string[] | undefined>;
          delete responseHeaders['transfer-encoding'];
          if (tg.abort.aborted) {
            data.body.destroy();
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
          const res: UpstreamResponse = { statusCode: data.statusCode, headers: responseHeaders, stream: data.body };
          relayResponse(request, reply, res).catch((relayError: unknown) => {
            data.body.destroy();
            sendGatewayError(request, reply, toGatewayError(relayError));
          });
        },
      );
    };

    const forward = (request: FastifyRequest, reply: FastifyReply): void => {
      const body = request.tg.mcp?.body;
      if (body && request.method === 'POST') {
        forwardBody(request, reply, body);
        return;
      }
      const hooks: ReplyFromOptions = {
        getUpstream: (req) => (req as FastifyRequest).tg.instance!.url,
        rewriteRequestHeaders: (req, headers) => buildUpstreamRequestHeaders(req as FastifyRequest, headers, options),
        rewriteHeaders: (headers, req) => buildClientResponseHeaders(headers, req as FastifyRequest | undefined),
        onResponse: (req, rep, res) => {
          // Never an unhandled rejection: whatever goes wrong while relaying becomes an answer.
          relayResponse(req as FastifyRequest, rep as FastifyReply, res as unknown as UpstreamResponse).catch((error: unknown) => {
            (res as unknown as UpstreamResponse).stream.destroy();
            sendGatewayError(request, rep as FastifyReply, toGatewayError(error));
          });
        },
        onError: (rep, { error }) => handleUpstreamError(request, rep as FastifyReply, error),
      };
      if (request.tg.mcp) {
        hooks.body = request.tg.mcp.body;
        hooks.contentType = request.headers['content-type'] ?? 'application/json';
      }
      request.tg.upstreamStartedAt = process.hrtime.bigint();
      reply.from(route.upstreamPath, hooks);
    };

    const relayResponse = async (request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse): Promise<void> => {
      const tg = request.tg;
      if (tg.upstreamStartedAt !== undefined) {
        const seconds = Number(process.hrtime.bigint() - tg.upstreamStartedAt) / 1e9;
        upstreamHeadersDuration.observe(seconds);
      }
      if (tg.instance) route.pool.markHealthy(tg.instance);
      try {
        await recordSessionOutcome(request, res.statusCode, headerValue(res.headers['mcp-session-id']), store, options.sessions);
      } catch (error) {
        res.stream.destroy();
        sendGatewayError(request, reply, new GatewayError('TG_ERR_STORE_UNAVAILABLE', { cause: error }));
        return;
      }
      const contentType = headerValue(res.headers['content-type']);
      const hook = createTaskResponseHook(options.tasks, request);
      if (isJson(contentType) && tg.mcp) {
        await relayJsonReply(request, reply, res, hook);
        return;
      }
      if (!isEventStream(contentType)) {
        reply.send(res.stream);
        return;
      }
      // Intermediaries must not buffer MCP event streams (2026-07-28 transport: SHOULD).
      reply.header('x-accel-buffering', 'no');
      reply.removeHeader('content-length');
      const tap = createSseTap({ maxEventBytes: options.limits.maxSseEventBytes, onMessage: hook });
      relayThrough(res.stream, tap, (error) => {
        if (!tg.abort.aborted) request.log.warn({ err: error }, 'upstream event stream ended with an error');
      });
      reply.send(tap);
    };

    /**
     * A JSON reply is read whole (it is one message, bounded by limits.maxResponseBytes) so the
     * tasks stage can see and rewrite it. One too large to inspect is refused rather than
     * relayed unseen: it could carry a backend task id.
     */
    const relayJsonReply = async (request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse, hook: ReturnType<typeof createTaskResponseHook>): Promise<void> => {
      let body: Buffer;
      try {
        body = await readBounded(res.stream, options.limits.maxResponseBytes);
      } catch (error) {
        if (request.tg.abort.aborted) return;
        sendGatewayError(request, reply, new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'upstream reply too large or broken', cause: error }));
        return;
      }
      let rewritten: Buffer | null;
      try {
        rewritten = await rewriteJsonReply(body, hook);
      } catch (error) {
        // A store that failed mid-rewrite is already a 503 from the catalogue; anything else is ours.
        sendGatewayError(request, reply, toGatewayError(error));
        return;
      }
      if (request.tg.replyStatus !== undefined) reply.code(request.tg.replyStatus).headers(request.tg.replyHeaders ?? {});
      if (rewritten === null) {
        reply.code(202).removeHeader('content-type').removeHeader('content-length').send();
        return;
      }
      reply.header('content-length', rewritten.length).send(rewritten);
    };

    const handleUpstreamError = (request: FastifyRequest, reply: FastifyReply, error: Error): void => {
      const tg = request.tg;
      if (tg.abort.aborted) return; // the client left; nobody to answer
      const kind = classifyUpstreamError(error);
      metrics.upstreamErrors.inc({ upstream: route.pool.upstream, kind });
      if (kind === 'refused' && tg.instance) {
        route.pool.markRefused(tg.instance);
        request.log.warn({ instance: tg.instance.url, upstream: route.pool.upstream }, 'upstream instance refused the connection; cooling down');
        if (canFailOver(request)) {
          // Nothing reached the refusing instance, so the same bytes may go to another.
          const refused = (tg.refused ??= new Set());
          refused.add(tg.instance.url);
          const next = route.pool.selectInstance(Date.now(), refused);
          if (next && !refused.has(next.url)) {
            tg.instance = next;
            forward(request, reply);
            return;
          }
        }
      } else {
        request.log.warn({ err: error, instance: tg.instance?.url, upstream: route.pool.upstream }, 'upstream request failed');
      }
      const code = kind === 'timeout' ? 'TG_ERR_UPSTREAM_TIMEOUT' : kind === 'refused' ? 'TG_ERR_UPSTREAM_UNAVAILABLE' : 'TG_ERR_BAD_GATEWAY';
      sendGatewayError(request, reply, new GatewayError(code, { cause: error }));
    };

    // POST, which carries every JSON-RPC message (the path every task operation takes), is a
    // route of our own. @fastify/http-proxy's handler resolves and checks a destination per
    // request (a prefix rewrite, a decode, three URL parses: ~5 µs) that forwardBody never
    // uses, since the gateway forwards to the policy's upstreamPath, not the client's path.
    // Same prefix and path as the proxy's routes, so the same URLs match.
    await scope.register(
      async (posts) => {
        posts.route({ method: 'POST', url: '/', preHandler, handler: (request, reply) => forward(request, reply) });
      },
      { prefix: route.path },
    );

    await scope.register(httpProxy, {
      upstream: '',
      prefix: route.path,
      routes: ['/'],
      // Every other method reaches the mcp stage so that the unsupported ones get a proper 405.
      httpMethods: ['GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'],
      proxyPayloads: false,
      disableRequestLogging: true,
      undici: options.agent as never,
      preHandler,
      replyOptions: { getUpstream: (req) => (req as FastifyRequest).tg.instance!.url },
      handler: (request, reply) => forward(request as FastifyRequest, reply as FastifyReply),
    });
  });
}

interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  stream: NodeJS.ReadableStream & { destroy(error?: Error): void };
}

type UpstreamErrorKind = 'refused' | 'timeout' | 'reset' | 'other';

function classifyUpstreamError(error: Error): UpstreamErrorKind {
  const codes = [(error as { code?: string }).code, ((error as { cause?: { code?: string } }).cause)?.code];
  if (codes.some((c) => c === 'ECONNREFUSED' || c === 'ENOTFOUND' || c === 'EHOSTUNREACH')) return 'refused';
  if (codes.some((c) => c === 'UND_ERR_CONNECT_TIMEOUT' || c === 'UND_ERR_HEADERS_TIMEOUT' || c === 'UND_ERR_BODY_TIMEOUT' || c === 'FST_REPLY_FROM_GATEWAY_TIMEOUT')) return 'timeout';
  if (codes.some((c) => c === 'ECONNRESET' || c === 'UND_ERR_SOCKET')) return 'reset';
  return 'other';
}

function armRequestTimeout(request: FastifyRequest, reply: FastifyReply, ms: number): void {
  const timer = setTimeout(() => {
    request.tg.abort.abort();
    if (!reply.raw.headersSent) sendGatewayError(request, reply, new GatewayError('TG_ERR_UPSTREAM_TIMEOUT', { detail: 'request time limit reached' }));
    else reply.raw.destroy();
  }, ms);
  timer.unref();
  reply.raw.once('close', () => clearTimeout(timer));
}

/**
 * The client's headers as reply-from copies them for the upstream: without `connection`, the
 * names it lists and `transfer-encoding`. The caller sets Host, length and type for the body it
 * sends; the rest of the hop-by-hop headers go in buildUpstreamRequestHeaders.
 */
function copyRequestHeaders(incoming: IncomingHttpHeaders): IncomingHttpHeaders {
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

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
