/**
 * Everything the gateway builds from one policy (STYLE.md, Config): the routes with their
 * upstream pools, agents, auth and credentials, the task policy with its dependencies, the
 * Host/Origin and CORS rules and the protected-resource documents. A request reads the current
 * snapshot once, at its start (request.exchange.snapshot), and keeps it to the end, so a policy
 * swapped in meanwhile never shows a request half of two policies. What outlives a policy
 * (the store, metrics, logger, audit trail, per-replica counters) is passed in as SharedParts.
 *
 * A reload (src/reload/) builds the next snapshot beside this one, from this one: what did not
 * change (upstream agents and pools, fetched key sets) is kept rather than rebuilt. This
 * snapshot counts what runs on it (inFlight) and is closed once that is done.
 */
import type { Logger } from 'pino';
import { AuthStage, type RouteAuth } from '../auth/auth-stage.js';
import { buildMetadataDocuments, type ProtectedResource, type ProtectedResourceMetadata } from '../auth/resource-metadata.js';
import type { CredentialsPolicy } from '../upstream/credentials/credentials-policy.js';
import { UpstreamIdentity } from '../upstream/credentials/upstream-identity.js';
import type { Config } from '../config/index.js';
import { LimitsStage } from '../limits/limits-stage.js';
import { InFlight } from '../lifecycle/in-flight.js';
import { CorsRules } from '../listener/cors.js';
import { buildHostOriginPolicy, type HostOriginPolicy } from '../listener/host-origin.js';
import type { HandleHasher } from '../observability/handle-hash.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { TaskObserver } from '../observability/task-observer.js';
import type { ProvidedTasks } from '../provided/provided-tasks.js';
import type { StatusPush } from '../push/status-push.js';
import type { SessionPolicy } from '../routing/route-stage.js';
import type { Store } from '../store/store.js';
import type { TaskExtensions } from '../tasks/extension-points.js';
import type { TaskDeps } from '../tasks/task-context.js';
import { Tracing } from '../tracing/tracing.js';
import type { UpstreamAgent } from '../upstream/dispatcher.js';
import { BackendRoute } from '../upstream/backend-route.js';
import { createTaskCalls } from '../upstream/task-calls.js';
import { UpstreamSet } from '../upstream/upstream-set.js';
import type { InstancePool } from '../routing/balancer.js';

/** What outlives any one policy: built once per gateway, handed to every snapshot. */
export interface SharedParts {
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly store: Store;
  readonly observer: TaskObserver;
  /** Open 2025 tasks/result waits per principal on this replica (survives a policy swap). */
  readonly resultWaits: Map<string, number>;
  /** Tasks the gateway runs itself: their calls outlive any one policy. */
  readonly provided: ProvidedTasks;
  /** Task status push: its listener streams outlive any one policy. */
  readonly push: StatusPush;
  /** Capabilities registered at the tasks stage's extension points (src/tasks/extension-points.ts). */
  readonly extensions: TaskExtensions;
  /** Stands for a task handle wherever the raw value must not go (general log, spans). */
  readonly hashHandle: HandleHasher;
}

/** A policy route: its door to the backends, and how its callers are authenticated. */
export interface RouteEntry {
  readonly backend: BackendRoute;
  /** Undefined when the policy runs without authentication (auth.mode none). */
  readonly auth: RouteAuth | undefined;
}

// A 2025-era session's stickiness outlives its last request by this long.
const SESSION_IDLE_TTL_MS = 60 * 60 * 1000;

/**
 * How long an instance a reload removes keeps draining: as long as a task created on it before
 * the removal can live (the longer tasks.ttl.max of the two policies), and no shorter than a
 * session's stickiness.
 */
function drainMsOf(config: Config, previous: Config | undefined): number {
  return Math.max(config.tasks.ttl.max, previous?.tasks.ttl.max ?? 0, SESSION_IDLE_TTL_MS);
}

export class PolicySnapshot {
  readonly config: Config;
  readonly auth: AuthStage | undefined;
  readonly tasks: TaskDeps;
  /** Per-principal limits on tools/call and the enumeration suspension (src/limits/). */
  readonly limits: LimitsStage;
  readonly hostOrigin: HostOriginPolicy;
  /** CORS for the origins hostOrigin admits; undefined with listen.cors.mode none. */
  readonly cors: CorsRules | undefined;
  /**
   * Each upstream's credentials, and credentialsFor(caller, upstream) for calls the gateway
   * makes itself (src/auth/upstream-identity.ts).
   */
  readonly identity: UpstreamIdentity;
  /** The policy's tracing; undefined with tracing off, and then nothing is traced. */
  readonly tracing: Tracing | undefined;
  readonly sessions: SessionPolicy = { idleTtlMs: SESSION_IDLE_TTL_MS };
  /** RFC 9728 documents by the path they are served at; empty without authentication. */
  readonly metadataDocuments: ReadonlyMap<string, ProtectedResourceMetadata>;
  /** Requests and gateway calls running on this snapshot; it is closed when they are done. */
  readonly inFlight = new InFlight();
  private readonly routes: ReadonlyMap<string, RouteEntry>;
  private readonly upstreams: UpstreamSet;
  private closing: Promise<void> | undefined;

  private constructor(config: Config, auth: AuthStage | undefined, shared: SharedParts, previous: PolicySnapshot | undefined) {
    this.config = config;
    this.auth = auth;
    this.tracing = Tracing.create(config.tracing, shared);
    this.hostOrigin = buildHostOriginPolicy(config.publicUrl, config.listen.allowedHosts, config.listen.allowedOrigins);
    this.cors = config.listen.cors.mode === 'none' ? undefined : new CorsRules(config.listen.cors, this.hostOrigin);
    this.upstreams = new UpstreamSet(config.upstreams, { previous: previous?.upstreams, drainMs: drainMsOf(config, previous?.config) });
    this.limits = new LimitsStage(config.toolLimits, config.audit.enumeration, { limits: shared.store.limits, metrics: shared.metrics }, { operatorSuspensions: config.console.enabled });
    this.identity = new UpstreamIdentity(config.upstreams, { metrics: shared.metrics, logger: shared.logger });
    const credentialsOf = (upstream: string): CredentialsPolicy => this.identity.policyFor(upstream);
    // The door's calls about task records (cancels, polls, listens), with the owner's
    // credentials: a token-exchange upstream gets the owner's cached exchange, if one is left.
    // Counted in flight like a request: the agent a call uses stays open until it is done.
    const taskCalls = createTaskCalls({
      agentFor: (name: string) => this.upstreams.agents.get(name),
      credentialHeadersFor: (record) => this.identity.credentialsFor({ principalKey: record.owner }, record.upstream),
      inFlight: this.inFlight,
      maxAnswerBytes: config.limits.maxResponseBytes,
      tracing: this.tracing,
    });
    this.tasks = {
      store: shared.store,
      policy: config.tasks,
      authEnabled: auth !== undefined,
      logger: shared.logger,
      resultWaits: shared.resultWaits,
      observer: shared.observer,
      extensions: shared.extensions,
      // The console shows whose task it is: new records name their creator (src/console/).
      recordCreator: config.console.enabled ? { subject: config.console.principals === 'shown' } : undefined,
      listenUpstream: taskCalls.listen,
      credentialsPerCaller: (upstream) => {
        const type = this.identity.policyFor(upstream).credentials.type;
        return type === 'token-exchange' || type === 'identity-headers';
      },
      callUpstream: taskCalls.call,
    };

    const routes = new Map<string, RouteEntry>();
    const resources: ProtectedResource[] = [];
    for (const route of config.routes) {
      const pool = this.upstreams.pool(route.upstream);
      const routeAuth = auth?.forRoute(route);
      if (routeAuth) resources.push(routeAuth.protectedResource);
      const backend = new BackendRoute({
        path: route.path,
        upstreamPath: route.upstreamPath,
        pool,
        agent: this.upstreams.agent(route.upstream),
        credentials: credentialsOf(route.upstream),
        upstream: config.upstreams[route.upstream]!,
        limits: { maxResponseBytes: config.limits.maxResponseBytes, maxSseEventBytes: config.limits.maxSseEventBytes },
        sessions: this.sessions,
        inFlight: this.inFlight,
        tracing: this.tracing,
        trustProxy: config.listen.trustProxy !== false,
        cors: this.cors !== undefined,
        upstreamHeadersDuration: shared.metrics.upstreamHeadersDuration.labels({ upstream: route.upstream }),
      });
      const entry: RouteEntry = { backend, auth: routeAuth };
      // A route answers at its path with or without a trailing slash, nowhere below it.
      for (const path of pathForms(route.path)) if (!routes.has(path)) routes.set(path, entry);
    }
    this.routes = routes;
    // RFC 9728 metadata is served only when there is something to authorize against.
    this.metadataDocuments = auth ? buildMetadataDocuments(resources, auth.issuerIds) : new Map();
  }

  /**
   * Builds the snapshot of `config`; local key files are read here (a missing one throws).
   * `previous`, the snapshot in force, lends what `config` leaves unchanged.
   */
  static async build(config: Config, shared: SharedParts, previous?: PolicySnapshot): Promise<PolicySnapshot> {
    const auth = await AuthStage.create(config, { logger: shared.logger, metrics: shared.metrics }, previous?.auth);
    try {
      return new PolicySnapshot(config, auth, shared, previous);
    } catch (error) {
      // Let go of the key sets it holds, some of them the policy in force's.
      await auth?.close();
      throw error;
    }
  }

  /** The route serving a request URL (its path, before any query), if any. */
  matchRoute(url: string): RouteEntry | undefined {
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const route = this.routes.get(path);
    if (route || !path.includes('%')) return route;
    // The router decodes percent-escapes before matching; so does this, for the same answer.
    try {
      return this.routes.get(decodeURIComponent(path));
    } catch {
      return undefined;
    }
  }

  get agents(): ReadonlyMap<string, UpstreamAgent> {
    return this.upstreams.agents;
  }

  /** Each upstream's instance pool (health, cool-downs): what the operator console shows. */
  get pools(): ReadonlyMap<string, InstancePool> {
    return this.upstreams.pools;
  }

  /** Lets go of agents, key sets, exchanged tokens and the tracer (what a newer snapshot holds stays open); once. */
  close(): Promise<void> {
    // Calls held for a backend's answer are cut first: an agent closes only once its requests end.
    if (!this.closing) this.limits.close();
    this.closing ??= Promise.all([this.upstreams.close(), this.identity.close(), this.auth?.close(), this.tracing?.close()]).then(() => undefined);
    return this.closing;
  }
}

function pathForms(path: string): string[] {
  if (path === '/') return ['/'];
  return path.endsWith('/') ? [path, path.slice(0, -1)] : [path, `${path}/`];
}
