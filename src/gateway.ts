/**
 * buildGateway(config, deps): assembles the pipeline of DESIGN.md §2 and never listens by
 * itself. listener → (auth) → mcp → (tasks) → routing → upstream, one route per policy
 * route, plus the admin listener. Everything stateful is passed in or owned here: no
 * module-level singletons, so one process can run many gateways (tests do).
 */
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import { AuthStage } from './auth/auth-stage.js';
import { registerResourceMetadataRoutes, type ProtectedResource } from './auth/resource-metadata.js';
import { applyUpstreamCredentials, identityHeaderNames } from './auth/upstream-credentials.js';
import type { Config } from './config/index.js';
import { buildAdminServer } from './listener/admin-server.js';
import { sendGatewayError, toGatewayError } from './listener/error-reply.js';
import { buildHostOriginPolicy } from './listener/host-origin.js';
import { GatewayError } from './errors.js';
import { createLogger } from './observability/logger.js';
import { createAuditLog } from './observability/audit.js';
import { createHandleHasher } from './observability/handle-hash.js';
import { createMetrics, rpcMethodLabel, SeriesCache, type GatewayMetrics } from './observability/metrics.js';
import { instrumentStore } from './observability/store-metrics.js';
import { TaskObserver } from './observability/task-observer.js';
import { InstancePool } from './routing/balancer.js';
import { createStore } from './store/create-store.js';
import type { Store } from './store/store.js';
import type { TaskDeps } from './tasks/task-context.js';
import { TaskExpirySweeper } from './tasks/task-expiry.js';
import { createUpstreamCaller } from './tasks/upstream-call.js';
import { UpstreamAgent } from './upstream/dispatcher.js';
import { registerMcpRoute } from './upstream/proxy-route.js';

export interface GatewayDeps {
  logger?: Logger;
  metrics?: GatewayMetrics;
  store?: Store;
  /** Where audit events go instead of the policy's destinations (tests capture them). */
  auditDestination?: DestinationStream;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly admin: FastifyInstance;
  readonly metrics: GatewayMetrics;
  readonly store: Store;
  readonly logger: Logger;
  /** Starts both listeners; resolves with the URLs they are bound to. */
  listen(): Promise<{ url: string; adminUrl: string }>;
  /** Stops accepting, lets in-flight requests finish within the drain limit, then closes. */
  close(): Promise<void>;
}

const SESSION_IDLE_TTL_MS = 60 * 60 * 1000;
const EXPIRY_SWEEP_MS = 1000;
const GATEWAY_CALL_TIMEOUT_MS = 10_000;
// Request ids from clients are echoed into logs and upstream headers: keep them short and tame.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function taskHandleOf(tg: FastifyRequest['tg'] | undefined): string | undefined {
  return tg?.createdTask?.handle ?? tg?.task?.handle ?? tg?.requestedHandle;
}

export async function buildGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  const metrics = deps.metrics ?? createMetrics();
  const logger = deps.logger ?? createLogger(config.logging, () => metrics.logLinesDropped.inc({ log: 'general' }));
  if (!deps.store && config.store.type === 'memory') {
    // The process cannot see its siblings, so it says this once, loudly; the Helm chart refuses
    // to render more than one replica on the memory store.
    logger.warn('store.type is memory: tasks, sessions and limits live in this process only; run exactly one replica, or use store.type redis');
  }
  const store = instrumentStore(deps.store ?? createStore(config, logger), metrics);
  const audit = createAuditLog(config.audit, config.logging, () => metrics.logLinesDropped.inc({ log: 'audit' }), deps.auditDestination);
  const hashHandle = createHandleHasher(config.audit.handleHashSalt);
  const observer = new TaskObserver(metrics, audit, hashHandle, logger, config.audit);
  let draining = false;

  const app = Fastify({
    // pino's Logger is wider than fastify's logger type; the cast keeps FastifyInstance's default generics.
    loggerInstance: logger as FastifyBaseLogger,
    // One line per request, written by the onResponse hook below instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: config.listen.trustProxy,
    bodyLimit: config.limits.maxBodyBytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    serverFactory: (handler) => {
      const server = createServer({ maxHeaderSize: config.limits.maxHeaderBytes }, handler);
      if (config.limits.maxConnections > 0) server.maxConnections = config.limits.maxConnections;
      return server;
    },
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
    },
  });

  app.decorateRequest('rejection', undefined);
  app.setNotFoundHandler((request, reply) => sendGatewayError(request, reply, new GatewayError('TG_ERR_NO_ROUTE')));
  app.setErrorHandler((error, request, reply) => sendGatewayError(request, reply, toGatewayError(error)));
  const requestSeries = new SeriesCache<{ requests: { inc(): void }; duration: { observe(value: number): void } }>();
  const pollSeries = new SeriesCache<{ inc(): void }>();
  // Callback style, not async: this runs for every request and has nothing to wait for, so it
  // need not cost a promise and a microtask turn each time.
  app.addHook('onResponse', (request, reply, done) => {
    const tg = request.tg;
    const message = tg?.mcp?.message;
    const rpcMethod = rpcMethodLabel(message && 'method' in message ? message.method : undefined, message?.kind ?? 'none');
    const route = tg?.route.path ?? 'unmatched';
    const series = requestSeries.get(`${route}\n${request.method}\n${rpcMethod}\n${reply.statusCode}`, () => {
      const labels = { route, method: request.method, rpc_method: rpcMethod };
      return { requests: metrics.httpRequests.labels({ ...labels, status: String(reply.statusCode) }), duration: metrics.httpDuration.labels(labels) };
    });
    series.requests.inc();
    series.duration.observe(reply.elapsedTime / 1000);
    if (request.rejection) metrics.rejectedRequests.inc({ reason: request.rejection });
    const pollOutcome = tg?.pollOutcome;
    if (pollOutcome) pollSeries.get(pollOutcome, () => metrics.polls.labels({ outcome: pollOutcome })).inc();
    if (tg?.taskOutcome && rpcMethod.startsWith('tasks/')) {
      metrics.taskOperations.inc({ method: rpcMethod, outcome: reply.statusCode >= 500 ? 'error' : tg.taskOutcome });
    }
    const handle = taskHandleOf(tg);
    request.log.info(
      {
        method: request.method,
        path: route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        rpcMethod: message && 'method' in message ? rpcMethod : undefined,
        era: tg?.mcp?.era,
        upstream: tg?.route.pool.upstream,
        instance: tg?.instance?.url,
        // The hashed key, never the subject: the general log needs correlation, not identity.
        principal: tg?.principalKey,
        // Handles are bearer secrets: the general log gets their salted hash, the audit trail the value.
        task: handle === undefined ? undefined : hashHandle(handle),
        aborted: tg?.abort.aborted || undefined,
      },
      'request',
    );
    observer.requestEnded(request, reply.statusCode);
    done();
  });

  const auth = await AuthStage.create(config, { logger, metrics });
  if (!auth) {
    logger.warn('auth.mode is none: requests are not authenticated, and every client reaches the upstreams anonymously');
  }
  // Stripped from every client request on every route, so no client can pose as a principal.
  const strippedHeaders = identityHeaderNames(config.upstreams);

  const hostOrigin = buildHostOriginPolicy(config.publicUrl, config.listen.allowedHosts, config.listen.allowedOrigins);
  const agents = new Map<string, UpstreamAgent>();
  const pools = new Map<string, InstancePool>();
  for (const [name, upstream] of Object.entries(config.upstreams)) {
    pools.set(name, new InstancePool(name, upstream.instances, upstream.cooldown));
    agents.set(
      name,
      new UpstreamAgent(
        { connectMs: upstream.timeouts.connect, headersMs: upstream.timeouts.headers, bodyMs: upstream.timeouts.body },
        upstream.connections,
      ),
    );
  }
  const tasks: TaskDeps = {
    store,
    policy: config.tasks,
    authEnabled: auth !== undefined,
    logger,
    resultWaits: new Map(),
    observer,
    callUpstream: createUpstreamCaller({
      dispatcherFor: (name) => agents.get(name),
      credentialHeadersFor: (name) => {
        const headers: Record<string, string> = {};
        applyUpstreamCredentials(headers, { credentials: config.upstreams[name]!.credentials, strippedHeaders }, undefined);
        return headers;
      },
      timeoutMs: GATEWAY_CALL_TIMEOUT_MS,
    }),
  };
  const sweeper = new TaskExpirySweeper(tasks, (record) => observer.forgotten(record, 'expired'));

  const protectedResources: ProtectedResource[] = [];
  for (const route of config.routes) {
    const routeAuth = auth?.forRoute(route);
    if (routeAuth) protectedResources.push(routeAuth.protectedResource);
    await registerMcpRoute(app, {
      route: { path: route.path, upstreamPath: route.upstreamPath ?? route.path, pool: pools.get(route.upstream)! },
      agent: agents.get(route.upstream)!,
      store,
      metrics,
      hostOrigin,
      auth: routeAuth,
      credentials: { credentials: config.upstreams[route.upstream]!.credentials, strippedHeaders },
      sessions: { idleTtlMs: SESSION_IDLE_TTL_MS },
      tasks,
      trustProxy: config.listen.trustProxy !== false,
      limits: {
        maxBodyBytes: config.limits.maxBodyBytes,
        maxResponseBytes: config.limits.maxResponseBytes,
        maxSseEventBytes: config.limits.maxSseEventBytes,
        requestTimeoutMs: config.limits.requestTimeout,
      },
    });
  }
  // RFC 9728 metadata is served only when there is something to authorize against.
  if (auth) registerResourceMetadataRoutes(app, protectedResources, auth.issuerIds);

  const admin = buildAdminServer({
    logger,
    registry: metrics.registry,
    checks: [
      { name: 'listener', check: async () => !draining && app.server.listening },
      // admin.readiness.store: whether a store outage takes the replica out of its Service.
      { name: 'store', check: () => store.isReady(), required: config.admin.readiness.store === 'required' },
      // Not ready until every remote key set has been fetched once: before that, every
      // protected request would be answered 503.
      ...(auth ? [{ name: 'auth', check: async () => auth.ready }] : []),
    ],
  });

  return {
    app,
    admin,
    metrics,
    store,
    logger,
    async listen() {
      const url = await app.listen({ host: config.listen.host, port: config.listen.port });
      const adminUrl = await admin.listen({ host: config.admin.host, port: config.admin.port });
      sweeper.start(EXPIRY_SWEEP_MS);
      logger.info({ url, adminUrl, routes: config.routes.map((r) => r.path) }, 'taskgate listening');
      // Written now rather than with the next batch: operators and supervisors wait for it.
      logger.flush();
      return { url, adminUrl };
    },
    async close() {
      draining = true;
      const drain = setTimeout(() => {
        logger.warn({ drainMs: config.limits.drainTimeout }, 'drain limit reached; closing the remaining connections');
        app.server.closeAllConnections();
      }, config.limits.drainTimeout);
      drain.unref();
      try {
        await app.close();
      } finally {
        clearTimeout(drain);
        await sweeper.stop();
        await admin.close();
        await Promise.all([...agents.values()].map((agent) => agent.close()));
        await store.close();
        auth?.close();
        await audit.close();
      }
    },
  };
}
