/**
 * buildGateway(config, deps): assembles the pipeline of DESIGN.md §2 and never listens by
 * itself. What outlives a policy (store, metrics, logs, audit) is built once; everything built
 * from the policy is one PolicySnapshot that requests read at their start, and that a reload
 * replaces (src/reload/); the listener
 * carries the request log, the MCP routes (listener → auth → mcp → tasks → routing →
 * upstream) and the protected-resource metadata; the admin listener serves health and
 * metrics. No module-level singletons, so one process can run many gateways (tests do).
 */
import type { FastifyInstance } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import { registerResourceMetadataRoutes } from './pipeline/metadata-routes.js';
import { BackgroundCalls } from './background/background-calls.js';
import { Bridge } from './bridge/bridge.js';
import type { ProbeTarget } from './bridge/generation-probe.js';
import type { Config } from './config/index.js';
import { buildAdminServer } from './listener/admin-server.js';
import { createListener } from './pipeline/client-app.js';
import { AuditTimeline } from './console/audit-timeline.js';
import { OperatorConsole } from './console/operator-console.js';
import { createAuditLog, type AuditLog } from './observability/audit.js';
import { createHandleHasher } from './observability/handle-hash.js';
import { createLogger } from './observability/logger.js';
import { createMetrics, type GatewayMetrics } from './observability/metrics.js';
import { registerRequestLog } from './pipeline/request-log-hook.js';
import { instrumentStore } from './observability/store-metrics.js';
import { TaskObserver } from './observability/task-observer.js';
import { PolicySnapshot, type SharedParts } from './pipeline/policy-snapshot.js';
import { ProvidedTasks } from './provided/provided-tasks.js';
import { StatusPush } from './push/status-push.js';
import { PolicyReloader, type ReloadFileOptions, type ReloadResult } from './reload/policy-reloader.js';
import { hashOfConfig } from './reload/policy-source.js';
import { createStore } from './store/create-store.js';
import type { Store } from './store/store.js';
import type { TaskExtensions } from './tasks/extension-points.js';
import { TaskExpirySweeper } from './tasks/task-expiry.js';
import { registerMcpRoutes } from './pipeline/mcp-routes.js';

export interface GatewayDeps {
  logger?: Logger;
  metrics?: GatewayMetrics;
  store?: Store;
  /** Where audit events go instead of the policy's destinations (tests capture them). */
  auditDestination?: DestinationStream;
  /** SHA-256 of the policy file `config` was read from (src/reload/policy-source.ts); by default, of its JSON. */
  policyHash?: string;
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly admin: FastifyInstance;
  readonly metrics: GatewayMetrics;
  readonly store: Store;
  readonly logger: Logger;
  /** The tasks this replica runs itself (src/provided/). */
  readonly provided: ProvidedTasks;
  /** Bridging of the task generations (src/bridge/): what each backend instance serves. */
  readonly bridge: Bridge;
  /** The policy in force now. */
  readonly policy: PolicySnapshot;
  /** SHA-256 of the policy in force (of its file, or of its JSON when built in code). */
  readonly policyHash: string;
  /** Replaces the policy in force, unless it is refused (docs/operations.md, "Policy reload"). */
  reload(config: Config): Promise<ReloadResult>;
  /** Reads, validates and applies a policy file; undefined when skipped (onlyIfChanged). */
  reloadFile(path: string, options?: ReloadFileOptions): Promise<ReloadResult | undefined>;
  /** Starts both listeners; resolves with the URLs they are bound to. */
  listen(): Promise<{ url: string; adminUrl: string }>;
  /** Stops accepting, lets in-flight requests finish within the drain limit, then closes. */
  close(): Promise<void>;
}

const EXPIRY_SWEEP_MS = 1000;

export async function buildGateway(config: Config, deps: GatewayDeps = {}): Promise<Gateway> {
  const { shared, audit, hashHandle, timeline, bridge } = buildSharedParts(config, deps);
  const policy = await PolicySnapshot.build(config, shared);
  if (!policy.auth) {
    shared.logger.warn('auth.mode is none: requests are not authenticated, and every client reaches the upstreams anonymously');
  }
  const reloader = new PolicyReloader(policy, deps.policyHash ?? hashOfConfig(config), shared);
  const currentPolicy = () => reloader.current();
  let listening = false;
  // What each instance serves is asked again under every policy applied (src/bridge/).
  const probeAfter = (result: ReloadResult | undefined): ReloadResult | undefined => {
    if (listening && result?.outcome === 'applied') bridge.probe(probeTargetsOf(currentPolicy()));
    return result;
  };
  shared.push.usePolicy(() => currentPolicy().tasks);
  bridge.usePolicy(() => currentPolicy().tasks);

  const app = createListener(config, shared.logger, {
    counted: () => shared.metrics.connectionsDropped.inc(),
    warn: (dropped, maxConnections) =>
      shared.logger.warn({ dropped, maxConnections }, 'client connections closed unanswered: limits.maxConnections connections are open (taskgate_connections_dropped_total)'),
  });
  registerRequestLog(app, { metrics: shared.metrics, observer: shared.observer, hashHandle });
  await registerMcpRoutes(app, { currentPolicy, store: shared.store, metrics: shared.metrics, maxBodyBytes: config.limits.maxBodyBytes });
  registerResourceMetadataRoutes(app, currentPolicy);

  const sweeper = new TaskExpirySweeper(() => currentPolicy().tasks, (record) => shared.observer.forgotten(record, 'expired'));
  let draining = false;
  // Once ready, a reload never makes the replica unready for want of a new issuer's keys
  // (the reload waits for them a while; see PolicyReloader.awaitKeys).
  let authReady = false;
  const admin = buildAdminServer({
    logger: shared.logger,
    registry: shared.metrics.registry,
    checks: [
      { name: 'listener', check: async () => !draining && app.server.listening },
      // admin.readiness.store: whether a store outage takes the replica out of its Service.
      {
        name: 'store',
        check: () => shared.store.isReady(),
        get required() {
          return currentPolicy().config.admin.readiness.store === 'required';
        },
      },
      // Not ready until every remote key set has been fetched once: before that, every
      // protected request would be answered 503.
      ...(policy.auth ? [{ name: 'auth', check: async () => (authReady ||= currentPolicy().auth?.ready ?? true) }] : []),
    ],
  });
  // The operator console: its own room on the admin listener, off unless console.enabled.
  const operatorConsole = new OperatorConsole({
    currentPolicy,
    store: shared.store,
    metrics: shared.metrics,
    logger: shared.logger,
    audit,
    hashHandle,
    timeline,
    reloads: () => ({ hash: reloader.hash, history: reloader.history }),
    providedRunning: () => shared.provided.running,
    replica: {
      pushListeners: (handle) => shared.push.listenersOf(handle),
      taskSupport: (upstream, maxTools) => shared.provided.taskSupportOf(upstream, maxTools),
      principals: shared.observer.principals,
    },
  });
  operatorConsole.register(admin);

  return {
    app,
    admin,
    metrics: shared.metrics,
    store: shared.store,
    logger: shared.logger,
    provided: shared.provided,
    bridge,
    get policy() {
      return currentPolicy();
    },
    get policyHash() {
      return reloader.hash;
    },
    reload: (next) => reloader.reload(next).then((result) => probeAfter(result)!),
    reloadFile: (path, options) => reloader.reloadFile(path, options).then(probeAfter),
    async listen() {
      const url = await app.listen({ host: config.listen.host, port: config.listen.port });
      const adminUrl = await admin.listen({ host: config.admin.host, port: config.admin.port });
      sweeper.start(EXPIRY_SWEEP_MS);
      listening = true;
      bridge.probe(probeTargetsOf(currentPolicy()));
      shared.logger.info({ url, adminUrl, routes: config.routes.map((r) => r.path) }, 'taskgate listening');
      // Written now rather than with the next batch: operators and supervisors wait for it.
      shared.logger.flush();
      return { url, adminUrl };
    },
    async close() {
      draining = true;
      bridge.close();
      // Listener streams never end by themselves: ended first, so the drain does not wait for them.
      shared.push.close();
      const { drainTimeout } = currentPolicy().config.limits;
      const drain = setTimeout(() => {
        shared.logger.warn({ drainMs: drainTimeout }, 'drain limit reached; closing the remaining connections');
        app.server.closeAllConnections();
      }, drainTimeout);
      drain.unref();
      const started = Date.now();
      try {
        await app.close();
      } finally {
        clearTimeout(drain);
        // Calls of gateway-run tasks get what is left of the drain time, then end failed.
        await shared.provided.close(Math.max(0, drainTimeout - (Date.now() - started)));
        await sweeper.stop();
        await admin.close();
        await operatorConsole.close();
        await reloader.close();
        await shared.store.close();
        await audit.close();
      }
    },
  };
}

/** The parts that outlive any one policy: metrics, logs, the store, the audit trail. */
function buildSharedParts(config: Config, deps: GatewayDeps): { shared: SharedParts; audit: AuditLog; hashHandle: (handle: string) => string; timeline: AuditTimeline; bridge: Bridge } {
  const metrics = deps.metrics ?? createMetrics();
  const logger = deps.logger ?? createLogger(config.logging, () => metrics.logLinesDropped.inc({ log: 'general' }));
  if (!deps.store && config.store.type === 'memory') {
    // The process cannot see its siblings, so it says this once, loudly; the Helm chart refuses
    // to render more than one replica on the memory store.
    logger.warn('store.type is memory: tasks, sessions and limits live in this process only; run exactly one replica, or use store.type redis');
  }
  const store = instrumentStore(deps.store ?? createStore(config, logger), metrics);
  // The console's task timelines are fed from the audit trail as it is written (console/).
  const timeline = new AuditTimeline();
  const audit = timeline.tap(createAuditLog(config.audit, config.logging, () => metrics.logLinesDropped.inc({ log: 'audit' }), deps.auditDestination));
  const hashHandle = createHandleHasher(config.audit.handleHashSalt);
  const observer = new TaskObserver(metrics, audit, hashHandle, logger, config.audit, store.limits);
  const provided = new ProvidedTasks({ store, logger, observer, metrics });
  const push = new StatusPush({ store, logger, observer, metrics });
  // Capabilities at the tasks stage's extension points (src/tasks/extension-points.ts).
  const background = new BackgroundCalls({ runner: provided, metrics, logger });
  const bridge = new Bridge({ logger, metrics });
  // The capabilities, registered at the tasks stage's extension points: background calls are
  // asked before gateway-run tasks, so a call they detach never becomes a task of its own; the
  // bridge before gateway-run tasks too, so a backend task of the other generation stays the
  // backend's (run once).
  const extensions: TaskExtensions = {
    toolCallInterceptors: [background, bridge, provided],
    resultFilters: [provided, background, bridge],
    methodTakeovers: [...bridge.methodTakeovers, push, ...bridge.lastMethodTakeovers],
    taskKinds: [provided, bridge],
    eventStreamFilters: [provided],
    clientResponses: [bridge],
  };
  return { shared: { logger, metrics, store, observer, resultWaits: new Map(), provided, push, extensions, hashHandle }, audit, hashHandle, timeline, bridge };
}

/**
 * Every instance of every routed upstream whose policy bridges, with its route's way to it for
 * the gateway itself (BackendRoute.asGateway: the route's path and the gateway's own
 * credentials, a static bearer; a probe speaks for no principal, so identity headers and token
 * exchange send none).
 */
function probeTargetsOf(policy: PolicySnapshot): ProbeTarget[] {
  const targets = new Map<string, ProbeTarget>();
  for (const route of policy.config.routes) {
    const upstream = policy.config.upstreams[route.upstream];
    const backend = policy.matchRoute(route.path)?.backend;
    // A backend that authenticates each caller by an exchanged token can tell the gateway
    // nothing for no one: such an upstream is not probed (docs/bridging.md).
    if (!upstream || !backend || upstream.bridge === 'off' || upstream.credentials.type === 'token-exchange') continue;
    for (const origin of upstream.instances) {
      const key = `${route.upstream} ${origin}`;
      if (!targets.has(key)) targets.set(key, { upstream: route.upstream, origin, send: backend.asGateway(origin) });
    }
  }
  return [...targets.values()];
}
