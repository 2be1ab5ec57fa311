/**
 * The request log's place in the lifecycle: fastify's onResponse, once the answer has gone,
 * for every request the listener served (a request no route serves has no exchange).
 */
import type { FastifyInstance } from 'fastify';
import { createRequestLog, type RequestLogDeps } from '../observability/request-log.js';

export function registerRequestLog(app: FastifyInstance, deps: RequestLogDeps): void {
  const requestEnded = createRequestLog(deps);
  // Callback style, not async: this runs for every request and has nothing to wait for, so it
  // need not cost a promise and a microtask turn each time.
  app.addHook('onResponse', (request, reply, done) => {
    requestEnded(request.exchange, {
      httpMethod: request.method,
      statusCode: reply.statusCode,
      elapsedMs: reply.elapsedTime,
      rejection: request.rejection,
      log: request.log,
    });
    done();
  });
}
