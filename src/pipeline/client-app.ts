/**
 * The client-facing listener (DESIGN.md §2, step 1): the HTTP server and its limits, request
 * ids, and the one error renderer for everything answered before or outside a route.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { GatewayError } from '../errors.js';
import { createClientServer, type DroppedConnections } from '../listener/client-server.js';
import { sendGatewayError, toGatewayError } from './error-answer.js';

// Request ids from clients are echoed into logs and upstream headers: keep them short and tame.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function createListener(config: Config, logger: Logger, dropped?: DroppedConnections): FastifyInstance {
  const app = Fastify({
    // pino's Logger is wider than fastify's logger type; the cast keeps FastifyInstance's default generics.
    loggerInstance: logger as FastifyBaseLogger,
    // One line per request, written by the request log (observability/request-log.ts) instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: config.listen.trustProxy,
    bodyLimit: config.limits.maxBodyBytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    serverFactory: (handler) => createClientServer(config.limits, handler, dropped),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
    },
  });
  app.decorateRequest('rejection', undefined);
  app.setNotFoundHandler((request, reply) => sendGatewayError(request, reply, new GatewayError('TG_ERR_NO_ROUTE')));
  app.setErrorHandler((error, request, reply) => sendGatewayError(request, reply, toGatewayError(error)));
  return app;
}
