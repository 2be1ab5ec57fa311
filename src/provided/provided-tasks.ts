/**
 * Tasks the gateway runs itself (DESIGN.md §9, docs/provided-tasks.md): for the tools a
 * policy names, an unmodified MCP server becomes task-capable through the gateway. This is the
 * room's one door, registered at the tasks stage's extension points (extension-points.ts) by
 * gateway.ts: a tool-call interceptor (a tools/call of a listed tool becomes a task), the
 * task-kind handler of `provided` records (their tasks/*, a legacy client's answer to a question
 * the backend asked mid-call, expiry and lapsed leases), a result filter (the results that
 * advertise tasks), an event-stream filter (legacy status on GET streams), and the
 * GatewayRunTasks other capabilities use. It lives as
 * long as the gateway (its calls outlive any policy snapshot); each request brings its own
 * policy in request.snapshot.
 */
import { randomUUID } from 'node:crypto';
import type { Transform } from 'node:stream';
import type { TaskRequest } from '../tasks/task-request.js';
import type { Logger } from 'pino';
import { toWireError } from '../errors.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { TaskObserver } from '../observability/task-observer.js';
import { LegacyStatusPush } from './legacy-push/legacy-status-push.js';
import type { Store } from '../store/store.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { wireOf, type EraWire } from '../task-model/task-wire.js';
import { ttlWithin } from '../task-model/ttl-policy.js';
import type { DetachOptions, DetachOutcome, EventStreamFilter, GatewayRunTasks, ResultFilter, StageDeps, TaskKindHandler, ToolCallInterceptor } from '../tasks/extension-points.js';
import type { LocalAnswer, TaskDeps } from '../tasks/task-context.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import { advertiseProvidedTasks, ADVERTISING_METHODS } from './advertising.js';
import { BackendSupport, type LearntTaskSupport } from './backend-support.js';
import { callAgain, overTimeout } from './call-again.js';
import { callTarget, callTraceOf, failOverFor, startCall } from './call-start.js';
import { createLegacyTask, holdThenPromote, promoteModernCall, type CreationContext } from './creation.js';
import type { HeldCall } from './held-call.js';
import type { ProvidedContext } from './provided-context.js';
import { answerLegacyResult } from './result-stream.js';
import { answerCancel, answerGet, applyUpdate, cancelTask, type Retry } from './task-answers.js';
import { settledWithin, TaskDriver, type DriverSettings } from './task-driver.js';
import { ending, failureOutcome, SHUTDOWN_MESSAGE, transition } from './transitions.js';

export interface ProvidedTasksDeps {
  readonly store: Store;
  readonly logger: Logger;
  readonly observer: TaskObserver;
  readonly metrics: GatewayMetrics;
}

const LAPSED_BATCH = 100;

/** Also GatewayRunTasks: how other capabilities (background calls) hold, cancel and answer its tasks. */
export class ProvidedTasks implements GatewayRunTasks, TaskKindHandler, ToolCallInterceptor, ResultFilter, EventStreamFilter {
  readonly kind = 'provided';
  private readonly ctx: ProvidedContext;

  constructor(deps: ProvidedTasksDeps) {
    const legacyPush = new LegacyStatusPush(deps);
    this.ctx = { ...deps, replica: randomUUID(), support: new BackendSupport(), held: new Map<string, HeldCall>(), inFlight: 0, closing: false, legacyPush };
  }

  /** Legacy status notifications for provided tasks, on the sessions' GET streams relayed here. */
  get legacyPush(): LegacyStatusPush {
    return this.ctx.legacyPush;
  }

  /** What this replica learnt of `upstream`'s own task support (backend-support.ts), a copy for reading. */
  taskSupportOf(upstream: string, maxTools: number): LearntTaskSupport | undefined {
    return this.ctx.support.learntOf(upstream, maxTools);
  }

  /** EventStreamFilter: a legacy session's GET stream also carries its provided tasks' status. */
  attach(request: TaskRequest, stream: Transform): Transform {
    return this.ctx.legacyPush.attach(request, stream);
  }

  /** TaskKindHandler: upkeep with each expiry sweep. */
  sweep(deps: StageDeps, now: number): Promise<number> {
    return this.sweepLapsedLeases(deps.policy.statusMessageMaxLength, now);
  }

  /** A tools/call this room runs as a task: the answer, or undefined for the takeover stage. */
  async interceptToolCall(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined> {
    const params = message.params;
    if (!isObject(params) || typeof params.name !== 'string') return undefined;
    const tool = params.name;
    const upstream = request.route.pool.upstream;
    const policy = request.route.config.providedTasks;
    const wire = request.wire;
    if (!this.ctx.support.provides(policy, upstream, tool, wire)) return undefined;
    const creation: CreationContext = { ctx: this.ctx, deps, policy, settings: this.settings(deps, request, wire, policy.timeout) };
    // A client that did not ask for a task (modern: did not declare the extension) gets the plain result.
    if (!wire.asksForTask(message)) return undefined;
    request.toolName = tool.slice(0, 128);
    if (wire.taskStart === 'client') return createLegacyTask(creation, request, message, params, tool);
    request.declaresTasks = true;
    return promoteModernCall(creation, request, message, params, tool);
  }

  /** tasks/* of a provided task, after the owner check (and, for tasks/get, the poll's). */
  async answer(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer> {
    switch (message.method) {
      case 'tasks/get':
        return answerGet(deps, request, message, record);
      case 'tasks/result':
        return answerLegacyResult(deps, request, message, record.handle);
      case 'tasks/cancel':
        return answerCancel(this.ctx, deps, request, message, record);
      default: {
        const { answer, retry } = await applyUpdate(deps, message, record);
        if (retry) await this.retryWithCredentials(deps, request, retry);
        return answer;
      }
    }
  }

  /**
   * GatewayRunTasks: the call held, answered in time or gone on as a task recorded as a
   * background call (src/background/), legacy in the client's own backend session.
   */
  async runDetachable(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, options: DetachOptions): Promise<DetachOutcome | undefined> {
    const params = message.params;
    if (!isObject(params) || typeof params.name !== 'string') return undefined;
    const tool = params.name;
    const settings = this.settings(deps, request, request.wire, options.timeoutMs);
    const held = await holdThenPromote({ ctx: this.ctx, deps, settings }, request, message, params, tool, {
      waitMs: options.detachAfterMs,
      timeoutMs: options.timeoutMs,
      ttlMs: ttlWithin(deps.policy, tool, options.ttlMs),
      background: true,
    });
    if (!held) return undefined;
    return held.kind === 'task' ? { kind: 'detached', record: held.record } : { kind: 'answered', answer: held.answer };
  }

  /** GatewayRunTasks: as tasks/cancel does it. */
  async cancel(deps: StageDeps, record: TaskRecord): Promise<boolean> {
    return (await cancelTask(this.ctx, deps, record)) !== undefined;
  }

  /** GatewayRunTasks: as a modern tasks/update gives them; a complete round goes on here. */
  async provideInput(deps: StageDeps, request: TaskRequest, record: TaskRecord, inputResponses: Record<string, unknown>): Promise<boolean> {
    const { retry } = await applyUpdate(deps, { id: 0, params: { taskId: record.handle, inputResponses } }, record);
    if (retry) await this.retryWithCredentials(deps, request, retry);
    return retry !== undefined;
  }

  /** initialize, tools/list, server/discover results: tasks advertised where the gateway runs them. */
  filterResult(request: TaskRequest, method: string, result: JsonObject): boolean {
    if (!ADVERTISING_METHODS.has(method)) return false;
    return advertiseProvidedTasks(this.ctx.support, request, method, result);
  }

  /**
   * Legacy: the client answered a question the backend asked during a provided task's call (the
   * answer itself is forwarded to the backend by the takeover stage). Once none is left
   * unanswered, the task is working again.
   */
  async inputAnswered(handle: string, id: string): Promise<void> {
    const moved = await transition(this.ctx.store, handle, (view) => {
      const pending = view.state.pendingRequests ?? [];
      const left = pending.filter((request) => request.id !== id);
      if (left.length === pending.length) return undefined;
      const status = view.record.status === 'input_required' && left.length === 0 ? 'working' : view.record.status;
      return { patch: { status }, state: { ...view.state, pendingRequests: left } };
    });
    if (moved) this.ctx.observer.statusChanged(moved.before.record, moved.before.record.status, moved.status);
  }

  /** A provided task's lifetime ended: a call still held here stops (there is no task to write). */
  expired(record: TaskRecord): void {
    const held = this.ctx.held.get(record.handle);
    if (held) void held.cancel();
  }

  /**
   * Ends `working` tasks whose call lease lapsed: the replica holding the call stopped (a
   * crash, a kill), so nothing will ever answer them. Run with the expiry sweeps.
   */
  async sweepLapsedLeases(statusMessageMax: number, now = Date.now()): Promise<number> {
    const lapsed = await this.ctx.store.takeLapsedLeases(now, LAPSED_BATCH);
    let ended = 0;
    for (const handle of lapsed) {
      // This replica stalled past the lease (a long GC or event-loop pause) but runs the call
      // still: it is not dead, so the call keeps its task. A call held elsewhere is not known
      // here, and its lapse means that replica stopped.
      const local = this.ctx.held.get(handle);
      if (local && (await local.reclaimLease().catch(() => false))) {
        this.ctx.metrics.providedLeaseReclaims.inc();
        this.ctx.logger.warn('a provided task\'s call lease lapsed while this replica was stalled; the call took it back');
        continue;
      }
      const message = 'the gateway replica running this task stopped before the backend answered';
      const moved = await transition(this.ctx.store, handle, (view) =>
        view.record.status === 'working' ? ending('failed', failureOutcome(message), message, statusMessageMax)(view) : undefined,
      );
      if (!moved) continue;
      ended++;
      this.ctx.observer.statusChanged(moved.before.record, moved.before.record.status, 'failed');
      this.ctx.metrics.providedLeaseTakeovers.inc();
      this.ctx.metrics.providedTasksEnded.inc({ upstream: moved.before.record.upstream, outcome: 'failed' });
      this.ctx.logger.warn({ upstream: moved.before.record.upstream, tool: moved.before.record.tool }, 'a provided task\'s call lease lapsed; the task ends failed');
    }
    return ended;
  }

  /**
   * SIGTERM: calls still running get until `deadline` (the drain time), then end their tasks
   * failed, saying why. A task waiting for modern input holds no call and is left as it is.
   */
  async close(drainMs: number): Promise<void> {
    // From now on no task's next call starts (call-again.ts): a call that ends meanwhile ends its task.
    this.ctx.closing = true;
    const calls = [...this.ctx.held.values()];
    const all = Promise.all(calls.map((call) => call.done));
    if (await settledWithin(all.then(() => undefined), drainMs)) return;
    await Promise.all(calls.map((call) => call.fail(SHUTDOWN_MESSAGE)));
  }

  /** Calls held on this replica now (tests and metrics). */
  get running(): number {
    return this.ctx.inFlight;
  }

  /** What a call's driver needs, taken from the request now: a driver must not keep the request alive. */
  private settings(deps: StageDeps, request: TaskRequest, wire: EraWire, timeoutMs: number): DriverSettings {
    const provided = deps.policy.provided;
    const { maxResponseBytes, maxSseEventBytes } = request.route.limits;
    const callLimits = { maxResponseBytes, maxSseEventBytes };
    const settings: DriverSettings = {
      wire,
      upstream: request.route.pool.upstream,
      leaseMs: provided.lease,
      timeoutMs,
      limits: { maxResultBytes: provided.maxResultBytes, statusMessageMaxLength: deps.policy.statusMessageMaxLength },
      retry: (record, previous, requestState, callMs) =>
        callAgain(this.ctx, settings, {
          record,
          requestState,
          callMs,
          holdPolicy: () => previous.callTarget.hold(),
          start: (next) => {
            const plan = { call: next.call, extraParams: { requestState: next.requestState }, timeoutMs: next.timeoutMs, timeoutMessage: next.timeoutMessage };
            const trace = settings.tracing && { tracing: settings.tracing, upstream: settings.upstream, reason: 'retry' as const, task: next.record };
            new TaskDriver(this.ctx, (reports) => startCall(previous.callTarget, plan, callLimits, reports, trace), settings).attach(next.record);
          },
        }),
      // Not the request's trace: a retry without input runs after this request has ended.
      tracing: request.route.tracing,
    };
    return settings;
  }

  /**
   * The next round's credentials come from this tasks/update, the client's request at hand:
   * a token-exchange upstream gets a token exchanged for it (or the principal's cached one).
   */
  private async retryWithCredentials(deps: StageDeps, request: TaskRequest, retry: Retry): Promise<void> {
    try {
      await request.route.prepareCredentials(request);
    } catch (error) {
      request.log.warn({ err: toWireError(error)?.code ?? error }, 'no token for the backend call of a provided task\'s next round');
      await this.failUnstarted(deps, retry.record, 'no token for the backend could be obtained');
      return;
    }
    this.retry(deps, request, retry);
  }

  /** Modern tasks/update answered every question: the call again, on this replica. */
  private retry(deps: StageDeps, request: TaskRequest, retry: Retry): void {
    const instance = request.route.pool.selectInstance();
    const upstream = request.route.config;
    // A background call (src/background/) runs under its own section's limit.
    const policy = retry.record.backgroundCall === undefined ? upstream.providedTasks : upstream.backgroundCalls;
    const call = retry.view.state.call;
    if (!instance || !policy || !call) {
      void this.failUnstarted(deps, retry.record, 'no backend instance could take the call again');
      return;
    }
    const extraParams: JsonObject = { inputResponses: retry.inputResponses };
    if (retry.requestState !== undefined) extraParams.requestState = retry.requestState;
    // What is left of the task's timeout: its calls so far took part of it (the client's time to answer did not).
    const left = policy.timeout - (retry.view.state.spentMs ?? 0);
    const timeoutMessage = overTimeout(policy.timeout, retry.view.state.round + 1);
    if (left <= 0) {
      void this.failUnstarted(deps, retry.record, timeoutMessage);
      return;
    }
    const plan = { call, instance, extraParams, timeoutMs: Math.max(1, Math.min(left, retry.record.expiresAt - Date.now())), timeoutMessage };
    const target = callTarget(request, plan, false);
    const limits = request.route.limits;
    const trace = callTraceOf(request, 'retry', retry.record);
    // A modern round is bound to no session: a refusing instance hands it to the next.
    const failOver = failOverFor(request, plan, false);
    new TaskDriver(this.ctx, (reports) => startCall(target, plan, limits, reports, trace, failOver), this.settings(deps, request, wireOf(retry.record.era), policy.timeout)).attach(retry.record);
  }

  private async failUnstarted(deps: StageDeps, record: TaskRecord, message: string): Promise<void> {
    const moved = await transition(this.ctx.store, record.handle, ending('failed', failureOutcome(message), message, deps.policy.statusMessageMaxLength));
    if (moved) this.ctx.observer.statusChanged(moved.before.record, moved.before.record.status, 'failed');
  }
}
