/**
 * The rungs of the floor ladder (bench/floor-server.ts builds them, bench/floor.ts measures
 * them): each has every option of the rungs before it.
 */

/** The rungs, in order; `listener.ts` is a check: the real createListener, which must cost what `+handlers` costs. */
export const FLOOR_STEPS = [
  'node-http',
  'fastify',
  '+logger',
  '+genReqId',
  '+options',
  '+serverFactory',
  '+handlers',
  'listener.ts',
  '+buffer-parser',
  '+wildcard-route',
  '+onRequest',
  '+preHandler',
  '+onResponse',
] as const;
export type FloorStep = (typeof FLOOR_STEPS)[number];

export const FLOOR_STEP_TEXT: Record<FloorStep, string> = {
  'node-http': 'bare node:http, the bench backend\'s code for a 2026 tasks/get',
  fastify: 'fastify, `logger: false`, `POST /mcp`, its default JSON parser',
  '+logger': '+ the gateway\'s pino logger (level info, to /dev/null), fastify\'s request logging off',
  '+genReqId': '+ genReqId: the client\'s x-request-id if tame, else randomUUID()',
  '+options': '+ trustProxy, bodyLimit, return503OnClosing, forceCloseConnections: idle',
  '+serverFactory': '+ serverFactory: createClientServer (headersTimeout, checking interval, keepAliveTimeout, maxConnections)',
  '+handlers': '+ decorateRequest(rejection), not-found and error handlers',
  'listener.ts': 'the same, built by the real createListener (a check: equal to +handlers)',
  '+buffer-parser': '+ an encapsulated scope: every parser removed, `*` read as a Buffer, JSON.parse in the handler',
  '+wildcard-route': '+ route `POST /*`, and @fastify/http-proxy for the other methods, as the gateway registers',
  '+onRequest': '+ an async onRequest hook that attaches a request context (request.tg)',
  '+preHandler': '+ an async preHandler that does nothing',
  '+onResponse': '+ the real request log (src/observability/request-log.ts): metrics and one log line per request',
};

/**
 * Beside the ladder, the shape of fastify's own published benchmark (fastify/benchmarks: GET /,
 * no body, `{ hello: 'world' }` through a response schema, logger off), bare node:http and
 * fastify: what "within a few percent of node:http" measured.
 */
export const PUBLISHED_STEPS = ['get:node-http', 'get:fastify'] as const;
export type PublishedStep = (typeof PUBLISHED_STEPS)[number];

export const PUBLISHED_STEP_TEXT: Record<PublishedStep, string> = {
  'get:node-http': 'GET /, no body: bare node:http answering {"hello":"world"}',
  'get:fastify': 'GET /, no body: fastify, a response schema, logger off (the published benchmark\'s shape)',
};
