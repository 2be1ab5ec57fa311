/**
 * One rung of the floor ladder (bench/floor.ts): a server answering a 2026 `tasks/get` with the
 * same canned reply as bench/backend.ts, built up from bare node:http to fastify with every
 * listener option, parser, route shape and hook taskgate uses, one step at a time. FLOOR_STEP
 * names the rung; each rung has every option of the rungs before it, so the difference between
 * two neighbours is what one option costs.
 *
 * What the gateway does inside its hooks (auth, the mcp stage, the store) is not here: the
 * ladder ends where taskgate's own stages start, and bench/floor.ts measures those on the real
 * gateway. The listener options come from src/listener (the real server factory), the request
 * log from src/observability (the real onResponse hook), the policy's values from the real
 * config loader, so the ladder cannot drift from what the gateway runs.
 *
 * No function is made per request in this file: tsx compiles it with esbuild's keepNames, which
 * wraps every function made at run time in a `__name` call, and that would be the ladder's cost,
 * not fastify's.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import httpProxy from '@fastify/http-proxy';
import { parseConfig } from '../src/config/index.js';
import { createClientServer } from '../src/listener/client-server.js';
import { createListener } from '../src/pipeline/client-app.js';
import { createAuditLog } from '../src/observability/audit.js';
import { createHandleHasher } from '../src/observability/handle-hash.js';
import { createLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import { registerRequestLog } from '../src/pipeline/request-log-hook.js';
import { TaskObserver } from '../src/observability/task-observer.js';
import { announceReady, serveParentRequests } from './child-channel.js';
import { FLOOR_STEPS, PUBLISHED_STEPS, type FloorStep, type PublishedStep } from './floor-steps.js';

const step = (process.env.FLOOR_STEP ?? 'fastify') as FloorStep;
const published = PUBLISHED_STEPS.includes(step as unknown as PublishedStep);
const level = FLOOR_STEPS.indexOf(step);
if (level < 0 && !published) throw new Error(`FLOOR_STEP must be one of ${[...FLOOR_STEPS, ...PUBLISHED_STEPS].join(', ')}, not ${step}`);
/** Whether this rung has `rung`'s option (the check rung sits beside +handlers, not above it). */
const has = (rung: FloorStep): boolean => level >= FLOOR_STEPS.indexOf(rung) && !(rung === 'listener.ts' && step !== 'listener.ts');

// The policy values the listener reads, from the real loader: the bench policy sets none of them.
const config = parseConfig(
  JSON.stringify({
    publicUrl: 'http://127.0.0.1',
    auth: { mode: 'none' },
    upstreams: { bench: { instances: ['http://127.0.0.1:9'], bridge: 'off' } },
    routes: [{ path: '/mcp', upstream: 'bench' }],
    logging: { level: 'info' },
  }),
  { env: {}, source: 'floor' },
);

// The bench backend's reply to a 2026 tasks/get (bench/backend.ts, taskFields and sendJson).
const STAMP = '2026-01-01T00:00:00.000Z';
interface Rpc {
  id?: string | number;
  method?: string;
  params?: { taskId?: string };
}
function replyText(rpc: Rpc): string {
  const taskId = String(rpc.params?.taskId ?? '');
  return JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: { resultType: 'complete', taskId, status: 'working', createdAt: STAMP, lastUpdatedAt: STAMP, ttlMs: 3_600_000, pollIntervalMs: 0 } });
}

// ---- bare node:http, as bench/backend.ts reads and answers (its closures made module functions)
interface Collecting extends IncomingMessage {
  chunks: Buffer[];
  res: ServerResponse;
}
function onData(this: Collecting, chunk: Buffer): void {
  this.chunks.push(chunk);
}
function onEnd(this: Collecting): void {
  const body = replyText(JSON.parse(Buffer.concat(this.chunks).toString('utf8')) as Rpc);
  this.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  this.res.end(body);
}
function nodeHandler(req: IncomingMessage, res: ServerResponse): void {
  const collecting = req as Collecting;
  collecting.chunks = [];
  collecting.res = res;
  req.on('data', onData);
  req.on('end', onEnd);
}

// ---- fastify rungs
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
function genReqId(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
}

function answer(request: FastifyRequest, reply: FastifyReply): void {
  const body = request.body;
  const rpc = (Buffer.isBuffer(body) ? JSON.parse(body.toString('utf8')) : body) as Rpc;
  void reply.type('application/json').send(replyText(rpc));
}

function keepBuffer(_req: FastifyRequest, body: Buffer, done: (error: Error | null, body?: Buffer) => void): void {
  done(null, body);
}

interface FloorContext {
  route: { path: string; pool: { upstream: string } };
  abort: { aborted: boolean };
}
const ROUTE = { path: '/mcp', pool: { upstream: 'bench' } };
async function attachContext(request: FastifyRequest): Promise<void> {
  (request as unknown as { tg: FloorContext }).tg = { route: ROUTE, abort: { aborted: false } };
}
async function doNothing(): Promise<void> {}
function failed(_error: Error, _request: FastifyRequest, reply: FastifyReply): void {
  void reply.code(500).send('failed');
}
function notFound(_request: FastifyRequest, reply: FastifyReply): void {
  void reply.code(404).send('no route');
}

function fastifyOptions(): FastifyServerOptions {
  const logger = has('+logger') ? createLogger(config.logging) : undefined;
  return {
    ...(logger ? { loggerInstance: logger as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) } : { logger: false }),
    ...(has('+genReqId') ? { genReqId } : {}),
    ...(has('+options') ? { trustProxy: config.listen.trustProxy, bodyLimit: config.limits.maxBodyBytes, return503OnClosing: true, forceCloseConnections: 'idle' as const } : {}),
    ...(has('+serverFactory') ? { serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) => createClientServer(config.limits, handler) } : {}),
  };
}

async function buildFastify(): Promise<FastifyInstance> {
  const app = has('listener.ts') ? createListener(config, createLogger(config.logging)) : Fastify(fastifyOptions());
  if (has('+handlers') && !has('listener.ts')) {
    app.decorateRequest('rejection', undefined);
    app.setNotFoundHandler(notFound);
    app.setErrorHandler(failed);
  }
  if (has('+onResponse')) {
    const metrics = createMetrics();
    const hashHandle = createHandleHasher();
    const audit = createAuditLog(config.audit, config.logging, () => undefined);
    registerRequestLog(app, { metrics, observer: new TaskObserver(metrics, audit, hashHandle, app.log as never, config.audit), hashHandle });
  }
  if (!has('+buffer-parser')) {
    app.post('/mcp', answer);
    return app;
  }
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: config.limits.maxBodyBytes }, keepBuffer);
    if (has('+onRequest')) scope.addHook('onRequest', attachContext);
    const preHandler = has('+preHandler') ? doNothing : undefined;
    if (!has('+wildcard-route')) {
      scope.route({ method: 'POST', url: '/mcp', handler: answer });
      return;
    }
    scope.route({ method: 'POST', url: '/*', ...(preHandler ? { preHandler } : {}), handler: answer });
    await scope.register(httpProxy, { upstream: 'http://127.0.0.1:9', routes: ['/*'], httpMethods: ['GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'], proxyPayloads: false, disableRequestLogging: true });
  });
  return app;
}

// ---- the published benchmark's shape
const HELLO = JSON.stringify({ hello: 'world' });
function helloHandler(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(HELLO);
}
const HELLO_SCHEMA = { schema: { response: { 200: { type: 'object', properties: { hello: { type: 'string' } } } } } };
function hello(_request: FastifyRequest, reply: FastifyReply): void {
  void reply.send({ hello: 'world' });
}

if (step === ('get:node-http' as FloorStep)) {
  const server = createServer(helloHandler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  announceReady({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` });
  serveParentRequests(() => new Promise<void>((resolve) => server.close(() => resolve())));
} else if (step === ('get:fastify' as FloorStep)) {
  const app = Fastify();
  app.get('/', HELLO_SCHEMA, hello);
  announceReady({ url: `${await app.listen({ host: '127.0.0.1', port: 0 })}/` });
  serveParentRequests(() => app.close());
} else if (step === 'node-http') {
  const server = createServer(nodeHandler);
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  announceReady({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` });
  serveParentRequests(() => new Promise<void>((resolve) => server.close(() => resolve())));
} else {
  const app = await buildFastify();
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  announceReady({ url: `${url}/mcp` });
  serveParentRequests(() => app.close());
}
