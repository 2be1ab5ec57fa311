/**
 * The way back (Envoy's "a response flows back through the same filters in reverse"): the
 * upstream's answer reaches the client through the routing stage's session bookkeeping and the
 * tasks stage's rewriting. A JSON reply is read whole and rewritten; an event stream passes
 * through the SSE tap event by event; anything else is relayed as it comes.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';
import { sendGatewayError, toGatewayError } from './error-answer.js';
import { rewriteJsonReply, type MessageHook } from '../mcp/json-reply.js';
import { isEventStream, isJson } from '../mcp/media-type.js';
import { createSseTap } from '../mcp/sse-tap.js';
import { recordSessionOutcome } from '../routing/route-stage.js';
import type { Store } from '../store/store.js';
import type { UpstreamResponse } from './forward.js';
import { createTaskResponseHook } from '../tasks/task-responses.js';
import { discardBody, readBounded, relayThrough } from '../upstream/relay-streams.js';
import { sendStreamNow } from './stream-reply.js';

export async function relayResponse(request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse, store: Store): Promise<void> {
  const tg = request.exchange;
  const { snapshot, route } = tg;
  if (tg.upstreamStartedAt !== undefined) {
    route.upstreamHeadersDuration.observe(Number(process.hrtime.bigint() - tg.upstreamStartedAt) / 1e9);
  }
  if (tg.instance) route.pool.markHealthy(tg.instance);
  tg.trace?.upstreamResponded(res);
  try {
    await recordSessionOutcome(tg, res.statusCode, headerValue(res.headers['mcp-session-id']), store);
  } catch (error) {
    discardBody(res.stream);
    sendGatewayError(request, reply, new GatewayError('TG_ERR_STORE_UNAVAILABLE', { cause: error }));
    return;
  }
  const contentType = headerValue(res.headers['content-type']);
  const taskHook = createTaskResponseHook(snapshot.tasks, tg);
  // With tracing on, the spans see the backend's answer before and after the tasks stage.
  const hook = tg.trace ? tg.trace.observeMessages(taskHook) : taskHook;
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
  const tap = createSseTap({ maxEventBytes: snapshot.config.limits.maxSseEventBytes, onMessage: hook });
  const onError = (error: Error): void => {
    if (tg.abort.aborted) return;
    request.log.warn({ err: error }, 'upstream event stream ended with an error');
    // The gateway cuts the client's stream now; that is not the client hanging up.
    tg.abort.abort();
  };
  // A held 2025 call's stream is read to its end after a hang-up (src/limits/call-hold.ts).
  relayThrough(res.stream, tap, onError, tg.callHold !== undefined);
  // Registered event-stream filters add their own messages (a 2025 session's GET stream
  // carries its gateway-run tasks' status: src/provided/legacy-push/).
  let stream = tap;
  for (const filter of snapshot.tasks.extensions.eventStreamFilters) stream = filter.attach(tg, stream);
  // A GET stream may stay quiet for good: its headers go at once. A POST's stream carries the
  // answer to its request, which the client waits for anyway; its headers wait for the first
  // event, so that a first event the gateway cannot relay still becomes an error answer.
  if (request.method === 'GET') sendStreamNow(reply, stream);
  else reply.send(stream);
}

/**
 * A JSON reply is read whole (it is one message, bounded by limits.maxResponseBytes) so the
 * tasks stage can see and rewrite it. One too large to inspect is refused rather than
 * relayed unseen: it could carry a backend task id.
 */
async function relayJsonReply(request: FastifyRequest, reply: FastifyReply, res: UpstreamResponse, hook: MessageHook): Promise<void> {
  let body: Buffer;
  try {
    body = await readBounded(res.stream, request.exchange.snapshot.config.limits.maxResponseBytes);
  } catch (error) {
    if (request.exchange.abort.aborted) return;
    sendGatewayError(request, reply, new GatewayError('TG_ERR_BAD_GATEWAY', { detail: 'upstream reply too large or broken', cause: error }));
    return;
  }
  // Read whole although the client left: a held call's (src/limits/call-hold.ts). Nobody to answer.
  if (request.exchange.abort.aborted) return;
  let rewritten: Buffer | null;
  try {
    rewritten = await rewriteJsonReply(body, hook);
  } catch (error) {
    // A store that failed mid-rewrite is already a 503 from the catalogue; anything else is ours.
    sendGatewayError(request, reply, toGatewayError(error));
    return;
  }
  if (request.exchange.replyStatus !== undefined) reply.code(request.exchange.replyStatus).headers(request.exchange.replyHeaders ?? {});
  if (rewritten === null) {
    reply.code(202).removeHeader('content-type').removeHeader('content-length').send();
    return;
  }
  reply.header('content-length', rewritten.length).send(rewritten);
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
