/**
 * The MCP routes: the pipeline of DESIGN.md §2 as fastify hooks, for every path of the
 * current policy. Which path is a route, and everything a route needs, comes from the policy
 * snapshot a request reads at its start (src/pipeline/policy-snapshot.ts), so a new policy takes
 * effect without registering anything.
 *
 *   onRequest   the exchange → listener (Host/Origin, CORS) → auth       (before the body is read)
 *   preHandler  mcp (parse, era, headers) → batch rule → session → limits → tasks
 *               → routing → credentials                           (answer here, or pick an instance)
 *   handler     the forward (forward.ts) → the way back (way-back.ts)
 *   onResponse  the request log and audit (request-log-hook.ts)
 *
 * Each stage is a function of the exchange's view it needs (exchange.ts); only this room
 * applies what they decide to the fastify request and reply.
 *
 * POST, which carries every JSON-RPC message, is a route of our own; every other method goes
 * through @fastify/http-proxy, whose routes end in the same handler.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import httpProxy from '@fastify/http-proxy';
import { GatewayError } from '../errors.js';
import { sendGatewayError, toGatewayError } from './error-answer.js';
import { isPreflight } from '../listener/cors.js';
import { checkHostAndOrigin } from '../listener/host-origin.js';
import type { McpMessage } from '../mcp/jsonrpc.js';
import { checkMessageRules, checkOtherMethod, parseMcpPost, sessionIdOf } from '../mcp/mcp-stage.js';
import { wireOf } from '../task-model/task-wire.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { PolicySnapshot } from './policy-snapshot.js';
import { selectInstanceFor } from '../routing/route-stage.js';
import type { Store } from '../store/store.js';
import { governsMessage, planTaskRequest } from '../tasks/task-requests.js';
import { RequestExchange, type Exchange } from './exchange.js';
import type { Admission } from '../limits/limits-stage.js';
import { RouteDispatcher } from '../upstream/dispatcher.js';
import { createForwarder } from './forward.js';
import { headerValue, relayResponse } from './way-back.js';
import { sendStreamNow } from './stream-reply.js';

export interface McpRoutesDeps {
  /** The policy in force now; read once per request. */
  readonly currentPolicy: () => PolicySnapshot;
  readonly store: Store;
  readonly metrics: GatewayMetrics;
  /** The largest body any policy may allow (limits.maxBodyBytes is fixed for the process). */
  readonly maxBodyBytes: number;
}

export async function registerMcpRoutes(app: FastifyInstance, deps: McpRoutesDeps): Promise<void> {
  const dispatcher = new RouteDispatcher();
  const forward = createForwarder({ metrics: deps.metrics, dispatcher, relay: (request, reply, res) => relayResponse(request, reply, res, deps.store) });
  await app.register(async (scope) => {
    // Bodies are read once, as bytes, up to the limit: the mcp stage parses them and the
    // same bytes (or a rewrite) are forwarded.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: deps.maxBodyBytes }, (_req, body, done) => {
      done(null, body);
    });
    scope.setErrorHandler((error, request, reply) => sendGatewayError(request, reply, toGatewayError(error)));
    scope.addHook('onRequest', (request, reply) => startRequest(request, reply, deps.currentPolicy()));

    const preHandler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const exchange = request.exchange;
      runMcpStage(request);
      if (exchange.mcp?.batch) refuseGovernedBatch(exchange.mcp.messages, exchange.snapshot);
      exchange.sessionId = sessionIdOf(exchange.mcp?.era, request.headers);
      // Per-principal limits (src/limits/): a refused call never reaches the tasks stage.
      const admitted = exchange.snapshot.limits.admit(exchange);
      if (admitted) keepSlot(exchange, reply, await admitted);
      // The tasks stage may answer by itself, or pin the request to a task's own instance.
      const answer = await planTaskRequest(exchange.snapshot.tasks, exchange);
      if (answer) {
        // fastify runs the handler after this hook when a hang-up cut the answer short; it
        // forwards nothing for a request answered here (forward.ts).
        exchange.answeredLocally = true;
        reply.code(answer.status).headers(answer.headers ?? {}).type(answer.contentType ?? 'application/json');
        await (isStream(answer.body) ? sendStreamNow(reply, answer.body) : reply.send(answer.body));
        return;
      }
      // The client left while the stages ran: nothing to route, no token to obtain.
      if (exchange.abort.aborted) return;
      exchange.instance ??= await selectInstanceFor(exchange, deps.store);
      // A token-exchange upstream's token, obtained before anything is sent (BackendRoute.prepareCredentials).
      const token = exchange.route.prepareCredentials(exchange);
      if (token) await token;
    };

    scope.route({ method: 'POST', url: '/*', preHandler, handler: (request, reply) => forward(request, reply) });
    await scope.register(httpProxy, {
      upstream: '',
      routes: ['/*'],
      // Every other method reaches the mcp stage so that the unsupported ones get a proper 405.
      httpMethods: ['GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'],
      proxyPayloads: false,
      disableRequestLogging: true,
      undici: dispatcher as never,
      preHandler,
      // No instance when the preHandler answered or the client left: the handler then forwards nothing.
      replyOptions: { getUpstream: (req) => (req as FastifyRequest).exchange.instance?.url ?? '' },
      handler: (request, reply) => forward(request as FastifyRequest, reply as FastifyReply),
    });
  });
}

/**
 * The stages after mcp read one message per body. A batch (2025-03-26 only, the one revision
 * that has them) is therefore forwarded only when no stage governs any of its messages;
 * otherwise the whole body is refused before any backend sees it (docs/security.md,
 * "Batches"). Each stage says what it governs, so a stage added later is asked too.
 */
function refuseGovernedBatch(messages: readonly McpMessage[], snapshot: PolicySnapshot): void {
  const index = messages.findIndex((message) => snapshot.limits.governs(message) || governsMessage(message));
  if (index < 0) return;
  const message = messages[index]!;
  const what = message.kind === 'response' ? 'a response' : message.method;
  throw new GatewayError('TG_ERR_BATCH_GOVERNED', {
    detail: `batch element ${index} (${what}) must be sent on its own: the gateway checks such messages one by one`,
  });
}

/**
 * The listener and auth stages: the route (404 for a path no route serves), the client's
 * abort signal and time limit, Host and Origin, CORS (a preflight is answered here), then the
 * bearer token. Authentication comes before the body is even read: an unauthenticated client
 * gets nothing parsed, buffered or forwarded (the mcp stage runs in the preHandler).
 */
async function startRequest(request: FastifyRequest, reply: FastifyReply, snapshot: PolicySnapshot): Promise<void> {
  const route = snapshot.matchRoute(request.url);
  if (!route) throw new GatewayError('TG_ERR_NO_ROUTE');
  request.exchange = new RequestExchange(request, snapshot, route);
  // The snapshot stays open (its agents, its key sets) until this response is over.
  snapshot.inFlight.join();
  (reply.raw as ClosingResponse)[kReply] = reply;
  reply.raw.on('close', onResponseClose);
  const timeoutMs = snapshot.config.limits.requestTimeout;
  if (timeoutMs > 0) armRequestTimeout(request, reply, timeoutMs);
  const origin = headerValue(request.headers.origin);
  checkHostAndOrigin(snapshot.hostOrigin, request.headers.host, origin);
  // The origin is admitted: every answer from here on, errors included, is readable by it.
  if (snapshot.cors) {
    reply.headers(snapshot.cors.answerHeaders(origin));
    // A preflight carries no token (Fetch), so it is answered before auth, and never forwarded.
    if (origin !== undefined && isPreflight(request.method, request.headers)) {
      await reply.code(204).headers(snapshot.cors.preflightHeaders(origin)).send();
      return;
    }
  }
  if (!route.auth) return;
  const exchange = request.exchange;
  const caller = await route.auth.authenticate({ rawHeaders: request.raw.rawHeaders, url: request.url, log: request.log });
  exchange.principal = caller.principal;
  exchange.principalKey = caller.principalKey;
  exchange.subjectToken = caller.subjectToken;
}

const kReply = Symbol('taskgate.reply');
type ClosingResponse = FastifyReply['raw'] & { [kReply]?: FastifyReply };

/**
 * A response's end, whichever way it ends (a response closes exactly once): a client that
 * left before it finished aborts what is still running for it. One function for every
 * request, which finds its reply on the response, rather than a closure made per request.
 */
function onResponseClose(this: ClosingResponse): void {
  const reply = this[kReply]!;
  const tg = reply.request.exchange;
  // The trace first: a hang-up is recorded as the client's, not as the gateway giving up.
  tg.trace?.finish(reply.statusCode, reply.request.rejection);
  // Not finished, and not given up on by the gateway (which aborts first): the client hung up.
  // That is the client's choice, not a fault: one info line (docs/security.md, "Client hang-ups").
  if (!this.writableFinished && !tg.abort.aborted) {
    tg.abort.abort();
    logHangUp(reply);
  }
  tg.releaseResultWait?.();
  tg.snapshot.inFlight.leave();
}

function logHangUp(reply: FastifyReply): void {
  const request = reply.request;
  const message = request.exchange.mcp?.message;
  request.log.info(
    {
      method: request.method,
      path: request.exchange.route.path,
      rpcMethod: message && 'method' in message ? message.method : undefined,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      answeredLocally: request.exchange.answeredLocally,
    },
    'client hung up',
  );
}

/**
 * A tools/call slot the limits stage admitted goes back when the client's response closes:
 * at once in 2026-07-28 (the closed stream cancels the call), and in 2025 once the backend
 * has answered too (its upstream requests take the hold's signal, limits/call-hold.ts).
 */
function keepSlot(exchange: Exchange, reply: FastifyReply, admission: Admission | undefined): void {
  if (!admission) return;
  if (admission.kind === 'release') {
    reply.raw.once('close', admission.release);
    return;
  }
  const hold = admission.hold;
  exchange.callHold = hold;
  reply.raw.once('close', () => hold.responseClosed());
}

/** The mcp stage: a POST's body parsed once (kept on the exchange before its rules are checked, so their error answers carry the request's id); any other method checked. */
function runMcpStage(request: FastifyRequest): void {
  if (request.method !== 'POST') {
    checkOtherMethod(request.method, request.headers);
    return;
  }
  const mcp = parseMcpPost(request.headers, request.body);
  request.exchange.mcp = mcp;
  // The era, decided by the mcp stage, as the strategy every later stage asks (task-model/task-wire.ts).
  request.exchange.wire = wireOf(mcp.era);
  checkMessageRules(mcp, request.headers);
}

function isStream(body: unknown): body is NodeJS.ReadableStream {
  return typeof (body as { pipe?: unknown } | null)?.pipe === 'function';
}

function armRequestTimeout(request: FastifyRequest, reply: FastifyReply, ms: number): void {
  const timer = setTimeout(() => {
    request.exchange.abort.abort();
    if (!reply.raw.headersSent) sendGatewayError(request, reply, new GatewayError('TG_ERR_UPSTREAM_TIMEOUT', { detail: 'request time limit reached' }));
    else reply.raw.destroy();
  }, ms);
  timer.unref();
  reply.raw.once('close', () => clearTimeout(timer));
}
