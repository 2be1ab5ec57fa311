/**
 * Bridging the two task eras (DESIGN.md §12, docs/bridging.md): a client uses tasks in
 * its own era whatever its backend's. This is the room's one door, registered by
 * gateway.ts at the tasks stage's extension points (src/tasks/extension-points.ts):
 *   ToolCallInterceptor  a legacy client's task request for a backend that serves only modern tasks,
 *                        any call of a client of a backend that refuses its era
 *   MethodTakeover       the other requests of such a client (one per method, either era)
 *   ResultFilter         what a legacy client is told it can do (initialize, tools/list)
 *   TaskKindHandler      tasks/* of a `bridged` record; its refresh while someone listens
 *   ClientResponseTaker  a legacy client's answer to a bridged task's question
 * What each backend instance serves is learnt by probes (backend-generations.ts), and bridging
 * happens only where that is certain and the upstream's policy allows it (`bridge: auto`).
 */
import type { TaskRequest } from '../tasks/task-request.js';
import type { Logger } from 'pino';
import { GatewayError } from '../errors.js';
import type { Era } from '../mcp/era-name.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest, JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { Instance } from '../routing/balancer.js';
import { selectInstanceFor } from '../routing/route-stage.js';
import type { ServerRequestRoute, TaskRecord } from '../task-model/task-record.js';
import type { ClientResponseTaker, LocalAnswer, MethodTakeover, ResultFilter, StageDeps, TaskDeps, TaskKindHandler, ToolCallInterceptor } from '../tasks/extension-points.js';
import { isTerminalStatus } from '../task-model/task-record.js';
import { BackendGenerations } from './backend-generations.js';
import { createBridgeContext, type BridgeContext } from './bridge-context.js';
import { takeInputAnswer } from './client-answers.js';
import type { ProbeTarget } from './generation-probe.js';
import { answerLegacyCancel, answerLegacyGet } from './legacy-answers.js';
import { createBridgedLegacyTask } from './legacy-creation.js';
import { answerLegacyResult } from './legacy-result-stream.js';
import { LegacySessions } from './legacy-sessions.js';
import { answerModernCancel, answerModernGet, answerModernUpdate, refreshModern } from './modern-answers.js';
import { answerModernRequest } from './modern-requests.js';
import { answerLegacyRequest, LEGACY_METHODS } from './legacy-requests.js';

/** What the bridge does for a client of one era. */
interface ClientSide {
  interceptToolCall(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined>;
  filterResult(request: TaskRequest, method: string, result: Record<string, unknown>): boolean;
  answer(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer>;
  /** The record after asking its backend (only modern clients listen). */
  refresh(deps: TaskDeps, record: TaskRecord): Promise<TaskRecord>;
}

export interface BridgeDeps {
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
}

/** What a probe's answer may hold (how long it may take is the gateway's own call timeout, BackendRoute.asGateway). */
const PROBE_LIMITS = { maxResponseBytes: 4 * 1024 * 1024, maxSseEventBytes: 4 * 1024 * 1024 };

/**
 * The 2026-07-28 methods a modern client's request may name that the bridge answers for a backend
 * serving only legacy (modern-requests.ts): carried, or refused clearly rather than sent to a
 * backend that cannot read them. tools/call comes through the interceptor, tasks/* through the
 * task-kind handler.
 */
const MODERN_METHODS = [
  'server/discover', 'tools/list', 'prompts/list', 'prompts/get', 'resources/list', 'resources/read', 'resources/templates/list',
  'completion/complete', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'ping',
];

export class Bridge implements ToolCallInterceptor, ResultFilter, TaskKindHandler, ClientResponseTaker {
  readonly kind = 'bridged' as const;
  readonly generations: BackendGenerations;
  private readonly ctx: BridgeContext;
  private readonly sessions = new LegacySessions();
  private depsNow: (() => TaskDeps) | undefined;
  /** One takeover per method (extension-points.ts, MethodTakeover), each for modern requests. */
  readonly methodTakeovers: readonly MethodTakeover[] = [
    ...MODERN_METHODS.map((method) => ({
      method,
      era: 'modern' as const,
      takeOver: (deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest) => this.takeRequest(deps, request, message),
    })),
    ...LEGACY_METHODS.map((method) => ({
      method,
      era: 'legacy' as const,
      takeOver: (deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest) => this.takeLegacyRequest(deps, request, message),
    })),
  ];
  /**
   * Asked after status push (registered last): a modern listen that push does not answer (it names
   * no task handle) has nothing a legacy-only backend could serve, and is refused here.
   */
  readonly lastMethodTakeovers: readonly MethodTakeover[] = [
    { method: 'subscriptions/listen', era: 'modern', takeOver: (deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest) => this.takeRequest(deps, request, message) },
  ];

  constructor(deps: BridgeDeps) {
    this.generations = new BackendGenerations(deps, PROBE_LIMITS);
    this.ctx = createBridgeContext(deps.logger, deps.metrics, this.generations);
  }

  /** The task dependencies of the policy in force, for what the bridge does outside a request (expiry, the console's cancel). */
  usePolicy(depsNow: () => TaskDeps): void {
    this.depsNow = depsNow;
  }

  /** Learns anew what every instance serves (at start and after each reload). */
  probe(targets: readonly ProbeTarget[]): void {
    this.generations.refresh(targets);
  }

  close(): void {
    this.generations.close();
  }

  /**
   * The bridge's part for a client of each era (its backend speaks the other): a modern
   * client's calls go through takeRequest like its other requests; a legacy client's task
   * requests and its tasks' tasks/* take the legacy path. Chosen by the request's wire.
   */
  private readonly forClient: Readonly<Record<Era, ClientSide>> = {
    legacy: {
      interceptToolCall: (deps, request, message) => this.interceptLegacyToolCall(deps, request, message),
      filterResult: (request, method, result) => this.filterLegacyResult(request, method, result),
      answer: (deps, request, message, record) => this.answerLegacy(deps, request, message, record),
      refresh: (_deps, record) => Promise.resolve(record),
    },
    modern: {
      interceptToolCall: (deps, request, message) => this.takeRequest(deps, request, message),
      filterResult: () => false,
      answer: (deps, request, message, record) => this.answerModern(deps, request, message, record),
      refresh: (deps, record) => refreshModern(this.ctx, deps, record),
    },
  };

  interceptToolCall(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
    return this.forClient[request.wire.era].interceptToolCall(deps, request, message);
  }

  filterResult(request: TaskRequest, method: string, result: Record<string, unknown>): boolean {
    return this.forClient[request.wire.era].filterResult(request, method, result);
  }

  /** tasks/* of a bridged task, the way its client's era answers them (the record's era is its client's). */
  answer(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
    return this.forClient[record.era].answer(deps, request, message, record);
  }

  /** Someone listens to a bridged task (src/push/): its backend is asked, in its own era. */
  refresh(deps: TaskDeps, record: TaskRecord): Promise<TaskRecord> {
    return this.forClient[record.era].refresh(deps, record);
  }

  /** A legacy client's task request for a backend that serves only modern tasks, or any call to a backend that refuses legacy. */
  private async interceptLegacyToolCall(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
    const params = message.params;
    if (!isObject(params) || typeof params.name !== 'string' || !this.bridgesUpstream(request)) return undefined;
    const asksTask = isObject(params.task);
    // Only a backend that refuses legacy needs the bridge for a plain call; a task request, one
    // with an instance that serves modern tasks only.
    const pool = request.route.pool;
    const someModernOnly = asksTask && pool.instances.some((instance) => this.servesOnlyModern(request, instance));
    if (!someModernOnly && !this.refusesLegacy(request)) return undefined;
    const instance = await selectInstanceFor(request, deps.store);
    request.instance = instance;
    if (asksTask && this.servesOnlyModern(request, instance)) return createBridgedLegacyTask(this.ctx, deps, request, message, params, params.name, instance);
    return this.refusesLegacy(request, instance) ? answerLegacyRequest(this.ctx, request, message, instance, this.legacyTasksOf(request, instance, deps)) : undefined;
  }

  private filterLegacyResult(request: TaskRequest, method: string, result: Record<string, unknown>): boolean {
    if (!this.bridgesUpstream(request)) return false;
    const instance = request.instance;
    if (!instance || !this.servesOnlyModern(request, instance)) return false;
    if (method === 'initialize') return advertiseLegacyTasks(result);
    if (method === 'tools/list') return markToolsOptional(result);
    return false;
  }

  /** A modern client's request to a backend that serves only legacy: the bridge speaks legacy for it. */
  private async takeRequest(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
    // Only modern requests come here: its method takeovers are registered for the modern era, and its tool calls through forClient.
    if (message.method.startsWith('tasks/') || !this.bridgesUpstream(request)) return undefined;
    // Asked of every instance before one is chosen: choosing moves the balancer, and a request
    // the bridge leaves alone must be balanced as if it had not looked.
    if (!this.refusesModern(request)) return undefined;
    const pool = request.route.pool;
    const instance = pool.selectInstance();
    if (!instance || !this.refusesModern(request, instance)) return undefined;
    return answerModernRequest(this.ctx, this.sessions, deps, request, message, instance);
  }

  private async answerModern(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
    switch (message.method) {
      case 'tasks/get':
        return answerModernGet(this.ctx, deps, request, message, record);
      case 'tasks/update':
        return answerModernUpdate(this.ctx, deps, request, message, record);
      case 'tasks/cancel':
        return answerModernCancel(this.ctx, deps, request, message, record);
      default:
        throw new GatewayError('TG_ERR_METHOD_NOT_FOUND');
    }
  }

  private async answerLegacy(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
    switch (message.method) {
      case 'tasks/get':
        return answerLegacyGet(this.ctx, deps, request, message, record);
      case 'tasks/cancel':
        return answerLegacyCancel(this.ctx, deps, request, message, record);
      case 'tasks/result':
        return answerLegacyResult(this.ctx, deps, request, message, record);
      default:
        throw new GatewayError('TG_ERR_METHOD_NOT_FOUND');
    }
  }

  takeClientResponse(deps: StageDeps, request: TaskRequest, route: ServerRequestRoute, message: JsonRpcResponse): Promise<LocalAnswer | undefined> {
    return takeInputAnswer(this.ctx, deps, request, route, message);
  }

  /** Its questions' answers are taken before the stage routes them (takeClientResponse). */
  async inputAnswered(): Promise<void> {
    return undefined;
  }

  /**
   * The console's cancel (no client request at hand): the backend is asked in its own era (the
   * gateway's own calls, src/upstream/task-calls.ts, frame a bridged record by its backend's
   * wire, backendWireOf in src/task-model/task-wire.ts), and the task is `cancelled` here at once.
   */
  async cancel(deps: StageDeps, record: TaskRecord): Promise<boolean> {
    const now = await deps.store.getTask(record.handle);
    if (!now || isTerminalStatus(now.status)) return false;
    this.cancelUpstream(now, 'console');
    await deps.store.updateTask(now.handle, { status: 'cancelled', statusMessage: 'The task was cancelled by request.', lastUpdatedAtIso: new Date().toISOString() });
    await deps.store.invalidatePoll(now.handle);
    deps.observer.statusChanged(now, now.status, 'cancelled');
    return true;
  }

  /** Forgotten at the end of its lifetime: a task still running is cancelled at its backend. */
  expired(record: TaskRecord): void {
    if (!isTerminalStatus(record.status)) this.cancelUpstream(record, 'expired');
  }

  async sweep(): Promise<void> {
    return undefined;
  }

  private cancelUpstream(record: TaskRecord, reason: string): void {
    const deps = this.depsNow?.();
    if (!deps) return;
    deps.callUpstream(record, 'tasks/cancel', { reason }).catch((error: unknown) => {
      deps.logger.warn({ err: error, upstream: record.upstream }, 'could not cancel a bridged task upstream');
    });
  }

  private bridgesUpstream(request: TaskRequest): boolean {
    return request.route.config.bridge !== 'off';
  }

  /**
   * A legacy client's request to a backend that refuses legacy altogether (it answers only
   * 2026-07-28): the gateway answers it, speaking modern to the backend (legacy-requests.ts).
   */
  private async takeLegacyRequest(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
    if (!this.bridgesUpstream(request) || !this.refusesLegacy(request)) return undefined;
    const instance = await selectInstanceFor(request, deps.store);
    if (!this.refusesLegacy(request, instance)) return undefined;
    request.instance = instance;
    return answerLegacyRequest(this.ctx, request, message, instance, this.legacyTasksOf(request, instance, deps));
  }

  private legacyTasksOf(request: TaskRequest, instance: Instance, deps: StageDeps): { modern: boolean; list: boolean } {
    return { modern: this.generations.of(request.route.pool.upstream, instance.url).modernTasks === true, list: deps.authEnabled };
  }

  /** The instance (or, without one, every instance of the route's upstream) answers modern and refuses legacy. */
  private refusesLegacy(request: TaskRequest, instance?: Instance): boolean {
    const pool = request.route.pool;
    const instances = instance ? [instance] : pool.instances;
    return instances.every((candidate) => {
      const facts = this.generations.of(pool.upstream, candidate.url);
      return facts.modern === true && facts.legacy === false;
    });
  }

  /** The instance (or, without one, every instance of the route's upstream) answers legacy and refuses modern. */
  private refusesModern(request: TaskRequest, instance?: Instance): boolean {
    const pool = request.route.pool;
    const instances = instance ? [instance] : pool.instances;
    return instances.every((candidate) => {
      const facts = this.generations.of(pool.upstream, candidate.url);
      return facts.legacy === true && facts.modern === false;
    });
  }

  /** The instance serves modern tasks and, certainly, no legacy ones: a legacy client needs the bridge. */
  private servesOnlyModern(request: TaskRequest, instance: Instance): boolean {
    const facts = this.generations.of(request.route.pool.upstream, instance.url);
    return facts.modernTasks === true && facts.legacyTasks === false;
  }
}

/** Legacy initialize: the task capabilities the bridge serves (tasks/list is the stage's to add). */
function advertiseLegacyTasks(result: JsonObject): boolean {
  const capabilities = objectAt(result, 'capabilities');
  const tasks = objectAt(capabilities, 'tasks');
  objectAt(tasks, 'cancel');
  objectAt(objectAt(objectAt(tasks, 'requests'), 'tools'), 'call');
  return true;
}

/**
 * Legacy tools/list: a modern backend says per call, not per tool, whether it makes a task, so
 * every tool may be asked for one (a plain answer then ends the task at once).
 */
function markToolsOptional(result: JsonObject): boolean {
  if (!Array.isArray(result.tools)) return false;
  let changed = false;
  for (const tool of result.tools) {
    if (!isObject(tool)) continue;
    const execution = isObject(tool.execution) ? tool.execution : {};
    if (execution.taskSupport === 'optional' || execution.taskSupport === 'required') continue;
    tool.execution = { ...execution, taskSupport: 'optional' };
    changed = true;
  }
  return changed;
}

function objectAt(holder: JsonObject, key: string): JsonObject {
  const value = holder[key];
  if (isObject(value)) return value;
  const made: JsonObject = {};
  holder[key] = made;
  return made;
}
