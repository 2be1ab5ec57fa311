/**
 * An upstream's 401 or 403 answers the gateway's credentials (its static token, or the token
 * exchanged for this upstream), never the client's: the client's token never reaches an
 * upstream. Relaying it would hand the client a challenge (WWW-Authenticate naming the
 * upstream's own metadata) telling it to log in somewhere it never talks to. The client is
 * answered 502 TG_ERR_UPSTREAM_AUTH_REFUSED instead, logged and counted
 * (taskgate_upstream_errors_total{kind="auth_refused"}).
 *
 * With token exchange the exchanged token may have been revoked or judged stale upstream: a
 * request whose body the gateway holds (every JSON-RPC POST) is sent once more with a fresh
 * exchange first.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';
import { sendGatewayError, toGatewayError } from './error-answer.js';
import type { GatewayMetrics } from '../observability/metrics.js';

const retried = new WeakSet<FastifyRequest>();

/**
 * Answers an upstream's 401/403: a fresh exchange and `resend` (once per request, when the
 * upstream's tokens are exchanged and the request can be sent again), or 502.
 */
export function handleCredentialRefusal(request: FastifyRequest, reply: FastifyReply, statusCode: number, metrics: GatewayMetrics, resend?: () => void): void {
  const tg = request.exchange;
  const upstream = tg.route.pool.upstream;
  metrics.upstreamErrors.inc({ upstream, kind: 'auth_refused' });
  // Whatever the upstream's answer had set (reply-from copies its headers first) is not the client's.
  for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name);
  reply.header('x-request-id', request.id);
  if (resend && tg.route.credentials.exchanger && !retried.has(request)) {
    retried.add(request);
    request.log.warn({ upstream, instance: tg.instance?.url, status: statusCode }, 'upstream refused the exchanged token; exchanging again and retrying once');
    // An exchanger is there, so a promise is too.
    tg.route.prepareCredentials(tg, { refresh: true })!.then(resend, (error: unknown) => {
      if (!tg.abort.aborted) sendGatewayError(request, reply, toGatewayError(error));
    });
    return;
  }
  request.log.warn({ upstream, instance: tg.instance?.url, status: statusCode }, 'upstream refused the gateway\'s credentials; answered 502');
  sendGatewayError(request, reply, new GatewayError('TG_ERR_UPSTREAM_AUTH_REFUSED', { detail: `upstream answered ${statusCode}` }));
}
