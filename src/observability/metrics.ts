/**
 * The gateway's Prometheus metrics. Each gateway owns its registry (no prom-client global),
 * so one test process can run many gateways. Labels are bounded: route paths and upstream
 * names come from the policy, JSON-RPC methods are folded into a fixed set, status codes
 * are finite; never a task id, session id or subject.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const KNOWN_RPC_METHODS = new Set([
  'initialize',
  'ping',
  'server/discover',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'subscriptions/listen',
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
  'tasks/update',
]);

/** Folds a client-chosen JSON-RPC method into a bounded label value. */
export function rpcMethodLabel(method: string | undefined, kind: 'request' | 'notification' | 'response' | 'none'): string {
  if (kind === 'none') return 'none';
  if (kind === 'response') return 'response';
  if (method === undefined) return 'other';
  if (kind === 'notification') return method.startsWith('notifications/') ? 'notification' : 'other';
  return KNOWN_RPC_METHODS.has(method) ? method : 'other';
}

/**
 * A metric's label children, remembered by a key the caller builds from the label values:
 * prom-client hashes the label object on every inc or observe otherwise, and the per-request
 * metrics are updated on every request. Label values are bounded already; `max` is a
 * backstop, past which children are looked up per call as prom-client does.
 */
export class SeriesCache<T> {
  private readonly children = new Map<string, T>();

  constructor(private readonly max = 1000) {}

  get(key: string, make: () => T): T {
    let child = this.children.get(key);
    if (child === undefined) {
      child = make();
      if (this.children.size < this.max) this.children.set(key, child);
    }
    return child;
  }
}

export interface GatewayMetrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'route' | 'method' | 'rpc_method' | 'status'>;
  readonly httpDuration: Histogram<'route' | 'method' | 'rpc_method'>;
  readonly upstreamHeadersDuration: Histogram<'upstream'>;
  readonly upstreamErrors: Counter<'upstream' | 'kind'>;
  readonly rejectedRequests: Counter<'reason'>;
  readonly polls: Counter<'outcome'>;
  readonly tasksCreated: Counter<'upstream' | 'tool'>;
  readonly tasksLive: Gauge<'status'>;
  readonly timeToTerminal: Histogram<'upstream' | 'status'>;
  readonly tasksForgotten: Counter<'reason'>;
  readonly storeDuration: Histogram<'operation'>;
  readonly storeErrors: Counter<'operation'>;
  readonly detectorEvents: Counter<'detector'>;
  readonly legacyStatusNotifications: Counter<'outcome'>;
  readonly legacyStatusStreams: Gauge;
  readonly taskOperations: Counter<'method' | 'outcome'>;
  readonly limitRejections: Counter<'limit' | 'scope'>;
  readonly jwtVerifications: Counter<'outcome'>;
  readonly tokenExchanges: Counter<'upstream' | 'outcome'>;
  readonly tokenExchangeDuration: Histogram<'upstream'>;
  readonly jwksRefreshes: Counter<'outcome'>;
  readonly logLinesDropped: Counter<'log'>;
  readonly connectionsDropped: Counter;
  readonly providedCallsRunning: Gauge;
  readonly providedTasksEnded: Counter<'upstream' | 'outcome'>;
  readonly providedCallDuration: Histogram<'upstream'>;
  readonly providedLeaseTakeovers: Counter;
  readonly providedLeaseReclaims: Counter;
  readonly backgroundCalls: Counter<'upstream' | 'outcome'>;
  readonly backgroundStatusCalls: Counter<'answer'>;
  readonly pushSubscriptions: Gauge;
  readonly pushNotifications: Counter<'outcome' | 'reason'>;
  readonly pushDeliveryLag: Histogram;
  readonly pushUpstreamPolls: Counter<'outcome'>;
  readonly configReloads: Counter<'outcome'>;
  readonly configHash: Gauge;
  readonly configLastReloadSuccessful: Gauge;
  readonly configDrainingPolicies: Gauge;
  readonly consoleRequests: Counter<'outcome'>;
  readonly consoleActions: Counter<'action' | 'outcome'>;
  readonly bridgeBackendGeneration: Gauge<'upstream' | 'instance' | 'generation'>;
  readonly bridgeOperations: Counter<'upstream' | 'client' | 'backend' | 'method' | 'outcome'>;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): GatewayMetrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'taskgate_' });
  const registers = [registry];
  return {
    registry,
    httpRequests: new Counter({
      name: 'taskgate_http_requests_total',
      help: 'Client requests by route, HTTP method, JSON-RPC method and HTTP status.',
      labelNames: ['route', 'method', 'rpc_method', 'status'],
      registers,
    }),
    httpDuration: new Histogram({
      name: 'taskgate_http_request_duration_seconds',
      help: 'Time from request arrival to the end of the response (streams included).',
      labelNames: ['route', 'method', 'rpc_method'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    upstreamHeadersDuration: new Histogram({
      name: 'taskgate_upstream_response_seconds',
      help: 'Time from dispatch to upstream response headers.',
      labelNames: ['upstream'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    upstreamErrors: new Counter({
      name: 'taskgate_upstream_errors_total',
      help: 'Upstream failures by upstream and kind: refused, timeout, reset, other, and auth_refused (the upstream answered the gateway\'s own credentials 401 or 403).',
      labelNames: ['upstream', 'kind'],
      registers,
    }),
    polls: new Counter({
      name: 'taskgate_polls_total',
      help: 'tasks/get polls by outcome: forwarded to the backend, answered from the snapshot (cached), or refused (rejected).',
      labelNames: ['outcome'],
      registers,
    }),
    tasksCreated: new Counter({
      name: 'taskgate_tasks_created_total',
      help: 'Tasks created through the gateway, by upstream and tool (tool names past 200 distinct ones count as "other").',
      labelNames: ['upstream', 'tool'],
      registers,
    }),
    tasksLive: new Gauge({
      name: 'taskgate_tasks_live',
      help: 'Tasks the gateway holds, by last status seen. Each replica counts the changes it saw: sum over replicas.',
      labelNames: ['status'],
      registers,
    }),
    timeToTerminal: new Histogram({
      name: 'taskgate_task_time_to_terminal_seconds',
      help: 'From creation to the first time the gateway saw a terminal status.',
      labelNames: ['upstream', 'status'],
      buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200],
      registers,
    }),
    tasksForgotten: new Counter({
      name: 'taskgate_tasks_forgotten_total',
      help: 'Task handles the gateway forgot, by reason (expired, read_once).',
      labelNames: ['reason'],
      registers,
    }),
    storeDuration: new Histogram({
      name: 'taskgate_store_operation_seconds',
      help: 'Time of each store operation.',
      labelNames: ['operation'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    }),
    storeErrors: new Counter({
      name: 'taskgate_store_errors_total',
      help: 'Store operations that failed (unreachable, timed out), by operation.',
      labelNames: ['operation'],
      registers,
    }),
    detectorEvents: new Counter({
      name: 'taskgate_detector_events_total',
      help: 'Detector firings: enumeration (a principal probing handles), poll_abuse (a task polled far faster than its interval), overdue (a task still running when its lifetime ended).',
      labelNames: ['detector'],
      registers,
    }),
    legacyStatusNotifications: new Counter({
      name: 'taskgate_provided_status_notifications_total',
      help: '2025-11-25 notifications/tasks/status of gateway-run tasks, by outcome: delivered (written to the owning session\'s GET stream) or dropped (the stream was closed, or its client was over 64 KiB behind).',
      labelNames: ['outcome'],
      registers,
    }),
    legacyStatusStreams: new Gauge({
      name: 'taskgate_provided_status_sessions',
      help: '2025-11-25 sessions with a standalone GET stream open on this replica, which gateway-run tasks\' status notifications go to.',
      registers,
    }),
    taskOperations: new Counter({
      name: 'taskgate_task_operations_total',
      help: 'tasks/* requests by method and outcome (allowed, not_found, denied, throttled, error).',
      labelNames: ['method', 'outcome'],
      registers,
    }),
    limitRejections: new Counter({
      name: 'taskgate_limit_rejections_total',
      help: 'Requests refused by a per-principal limit: limit rate or concurrency (tools/call; scope global or tool), or suspended (tasks/* of a principal the enumeration detector suspended; scope tasks).',
      labelNames: ['limit', 'scope'],
      registers,
    }),
    rejectedRequests: new Counter({
      name: 'taskgate_rejected_requests_total',
      help: 'Requests the gateway answered itself with an error, by catalogue code.',
      labelNames: ['reason'],
      registers,
    }),
    // Outcomes only: an issuer, subject or token as a label would be unbounded or a secret.
    jwtVerifications: new Counter({
      name: 'taskgate_jwt_verifications_total',
      help: 'Bearer token checks by outcome: ok, cached, missing, malformed, expired, invalid, unavailable, insufficient_scope.',
      labelNames: ['outcome'],
      registers,
    }),
    tokenExchanges: new Counter({
      name: 'taskgate_token_exchanges_total',
      help: 'Upstream tokens wanted (credentials type token-exchange), by upstream and outcome: ok (exchanged), cache_hit, shared (joined an exchange already under way), refused (the authorization server said no), unavailable (down, slow, or an unusable answer), missing (a call the gateway makes itself found no cached token).',
      labelNames: ['upstream', 'outcome'],
      registers,
    }),
    tokenExchangeDuration: new Histogram({
      name: 'taskgate_token_exchange_seconds',
      help: 'Time of each RFC 8693 exchange at the token endpoint, whatever its outcome.',
      labelNames: ['upstream'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    logLinesDropped: new Counter({
      name: 'taskgate_log_lines_dropped_total',
      help: 'Log lines dropped because their destination could not keep up (over 16 MiB waiting), by log: general or audit.',
      labelNames: ['log'],
      registers,
    }),
    connectionsDropped: new Counter({
      name: 'taskgate_connections_dropped_total',
      help: 'Client connections closed unanswered because limits.maxConnections connections were open (idle keep-alive and push listeners included).',
      registers,
    }),
    jwksRefreshes: new Counter({
      name: 'taskgate_jwks_refreshes_total',
      help: 'Fetches of remote JSON Web Key Sets by outcome (ok, error).',
      labelNames: ['outcome'],
      registers,
    }),
    providedCallsRunning: new Gauge({
      name: 'taskgate_provided_calls_running',
      help: 'Backend calls this replica holds for tasks it runs itself (tasks.provided.maxRunning bounds new ones).',
      registers,
    }),
    providedTasksEnded: new Counter({
      name: 'taskgate_provided_tasks_ended_total',
      help: 'Tasks the gateway ran itself that ended, by upstream and outcome (completed, failed, cancelled).',
      labelNames: ['upstream', 'outcome'],
      registers,
    }),
    providedCallDuration: new Histogram({
      name: 'taskgate_provided_call_duration_seconds',
      help: 'How long the backend calls of gateway-run tasks took, from sending to their outcome.',
      labelNames: ['upstream'],
      buckets: [0.1, 0.5, 1, 2.5, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
      registers,
    }),
    providedLeaseTakeovers: new Counter({
      name: 'taskgate_provided_lease_takeovers_total',
      help: 'Gateway-run tasks ended failed by a replica because the replica running their call stopped renewing its lease.',
      registers,
    }),
    providedLeaseReclaims: new Counter({
      name: 'taskgate_provided_lease_reclaims_total',
      help: 'Call leases that lapsed while the replica running the call was stalled (event loop or GC pause past tasks.provided.lease), taken back by that call instead of failing its task.',
      registers,
    }),
    backgroundCalls: new Counter({
      name: 'taskgate_background_calls_total',
      help: 'Calls of tools that may become background calls (upstreams.*.backgroundCalls), by upstream and outcome: answered (the backend\'s answer went back as it was: it came within detachAfter, or a limit kept the call plain), detached (answered with a handle, the call goes on as a task), delivered (its outcome first read through the status tool), cancelled (through the cancel tool), abandoned (its lifetime ended before its outcome was read).',
      labelNames: ['upstream', 'outcome'],
      registers,
    }),
    backgroundStatusCalls: new Counter({
      name: 'taskgate_background_status_calls_total',
      help: 'Calls of the background-call status tool, by answer: ended (the call\'s outcome), running, input (the call waits for input), unknown (no such background call of the caller\'s).',
      labelNames: ['answer'],
      registers,
    }),
    bridgeBackendGeneration: new Gauge({
      name: 'taskgate_bridge_backend_generation',
      help: 'Which task generation each backend instance serves, as the gateway\'s probes found it: 1 for the current one of none, 2025-11-25, 2026-07-28, both, unknown (docs/bridging.md).',
      labelNames: ['upstream', 'instance', 'generation'],
      registers,
    }),
    bridgeOperations: new Counter({
      name: 'taskgate_bridge_operations_total',
      help: 'Task operations the gateway bridged between generations, by upstream, client and backend generation, method (tools/call, tasks/get, tasks/result, tasks/cancel, tasks/update, input), and outcome (ok, error).',
      labelNames: ['upstream', 'client', 'backend', 'method', 'outcome'],
      registers,
    }),
    pushSubscriptions: new Gauge({
      name: 'taskgate_push_subscriptions',
      help: 'Listen streams naming task handles that this replica holds open (tasks.push).',
      registers,
    }),
    pushNotifications: new Counter({
      name: 'taskgate_push_notifications_total',
      help: 'notifications/tasks by outcome: delivered (written to a listener\'s stream), or dropped with a reason (slow_listener: it was cut off, its queue past tasks.push.bufferBytes or taking nothing for tasks.push.stallTimeout; closed: it had left).',
      labelNames: ['outcome', 'reason'],
      registers,
    }),
    pushDeliveryLag: new Histogram({
      name: 'taskgate_push_delivery_lag_seconds',
      help: 'From a task\'s status change (its lastUpdatedAt) to the notification written to a listener\'s stream.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    pushUpstreamPolls: new Counter({
      name: 'taskgate_push_upstream_polls_total',
      help: 'tasks/get the gateway sent itself for listened-to backend tasks whose backend does not push, by outcome: changed, unchanged, skipped (another replica polled in this interval), failed.',
      labelNames: ['outcome'],
      registers,
    }),
    configReloads: new Counter({
      name: 'taskgate_config_reloads_total',
      help: 'Policy reloads by outcome: applied, unchanged (nothing to apply), invalid, restart_required, failed. Only applied changes the policy in force.',
      labelNames: ['outcome'],
      registers,
    }),
    configHash: new Gauge({
      name: 'taskgate_config_hash',
      help: 'The policy in force: the first 48 bits of the SHA-256 of its file, as a number (of its JSON when built in code). Replicas on the same policy show the same value.',
      registers,
    }),
    configLastReloadSuccessful: new Gauge({
      name: 'taskgate_config_last_reload_successful',
      help: '0 while the latest policy reload was refused (the previous policy still serves), 1 otherwise.',
      registers,
    }),
    configDrainingPolicies: new Gauge({
      name: 'taskgate_config_draining_policies',
      help: 'Policies replaced by a reload that are still open because requests that started under them have not finished.',
      registers,
    }),
    consoleRequests: new Counter({
      name: 'taskgate_console_requests_total',
      help: 'Requests to the operator console and its admin API by outcome: ok, unauthorized (401: no or bad credentials), forbidden (403: no console role, or a viewer acting), unavailable (503: operator keys not fetched yet).',
      labelNames: ['outcome'],
      registers,
    }),
    consoleActions: new Counter({
      name: 'taskgate_console_actions_total',
      help: 'Operator actions through the console by action (cancel, suspend, unsuspend) and outcome: done, not_found, conflict (the task had ended; the backend refused), failed (the backend or store could not be reached).',
      labelNames: ['action', 'outcome'],
      registers,
    }),
  };
}
