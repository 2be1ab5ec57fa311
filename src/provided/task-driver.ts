/**
 * Holds one backend call for one provided task on this replica: keeps the call's lease in the
 * store, watches the task for a cancel or its end (any replica may cancel it), turns progress
 * into the task's statusMessage and (legacy) the backend's questions into the task's pending
 * requests, and writes the call's outcome into the task when it settles.
 *
 * A modern call starts before it is a task (it may answer within promoteAfter): until attach()
 * the driver only holds the call, and release() lets it go when the answer came in time.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { EraWire } from '../task-model/task-wire.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import { TAKEN_LEASE_HOLDER } from '../store/provided-store.js';
import { StoreUnavailableError } from '../store/store-unavailable.js';
import type { TaskRecord } from '../task-model/task-record.js';
import { isTerminalStatus } from '../task-model/task-record.js';
import { mintServerRequestId } from '../tasks/handle.js';
import { SERVER_REQUEST_TTL_MS } from '../tasks/task-context.js';
import { isObject } from '../mcp/json.js';
import { sanitizeStatusMessage } from '../task-model/status-message.js';
import { overCap, stepForOutcome, type OutcomeLimits } from './call-outcome.js';
import type { CallOutcome, CallReports, CallRunner } from './call-runner.js';
import type { HeldCall } from './held-call.js';
import type { ProvidedContext } from './provided-context.js';
import { transition } from './transitions.js';
import type { Tracing } from '../tracing/tracing.js';

export const RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** Legacy: questions one call may leave unanswered at once; more ends the task (a backend in a loop). */
const MAX_PENDING_REQUESTS = 32;
/** How long a call's outcome is retried while the store is away (at least four leases). */
const OUTCOME_WRITE_BUDGET_MS = 60_000;
/** Progress is written to the store at most this often (the latest text wins). */
const PROGRESS_WRITE_MS = 500;

export interface DriverSettings {
  /** The era of the client the task is for: how its input is asked, how its tool errors end it. */
  readonly wire: EraWire;
  readonly upstream: string;
  readonly leaseMs: number;
  readonly limits: OutcomeLimits;
  /** upstreams.*.providedTasks.timeout: the task's backend time, all its calls together. */
  readonly timeoutMs: number;
  /**
   * Makes the same task's call again with `requestState` (modern, no input asked; call-again.ts),
   * settled once the next step is taken (a pause, or the task ended).
   */
  readonly retry: (record: TaskRecord, runner: CallRunner, requestState: string, callMs: number) => Promise<void>;
  /** The policy's tracing, for the spans of later calls (undefined with tracing off). */
  readonly tracing?: Tracing;
}

export class TaskDriver implements HeldCall {
  readonly done: Promise<void>;
  readonly runner: CallRunner;
  private record: TaskRecord | undefined;
  private decided!: (record: TaskRecord | undefined) => void;
  private readonly attachment: Promise<TaskRecord | undefined>;
  private leaseTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private progress: { text: string; timer: NodeJS.Timeout } | undefined;
  private readonly startedAt = performance.now();

  /** `start` sends the call, reporting to this driver. */
  constructor(
    private readonly ctx: ProvidedContext,
    start: (reports: CallReports) => CallRunner,
    private readonly settings: DriverSettings,
  ) {
    this.runner = start({ onProgress: (text) => this.noteProgress(text), onServerRequest: (request) => this.relayServerRequest(request) });
    // The policy the call started under stays open (its agent) until the call and its writes are done.
    const leavePolicy = this.runner.callTarget.hold();
    ctx.inFlight++;
    ctx.metrics.providedCallsRunning.inc();
    this.attachment = new Promise((resolve) => (this.decided = resolve));
    this.done = this.runner.outcome
      .then((outcome) => this.finish(outcome))
      .catch((error: unknown) => {
        ctx.logger.error({ err: error, upstream: settings.upstream }, 'a provided task\'s call could not be settled');
      })
      .finally(leavePolicy);
  }

  /** The call now belongs to `record`: its reports and outcome are written to the task. */
  attach(record: TaskRecord): void {
    this.record = record;
    this.ctx.held.set(record.handle, this);
    this.unsubscribe = this.ctx.store.events.subscribe(record.handle, () => void this.check());
    void this.holdLease();
    this.leaseTimer = setInterval(() => void this.holdLease(), Math.max(1, Math.floor(this.settings.leaseMs / 3)));
    this.leaseTimer.unref();
    this.decided(record);
  }

  /** No task will own the call: its outcome went to the client directly. */
  release(): void {
    this.decided(undefined);
  }

  async cancel(): Promise<void> {
    this.runner.abort('aborted', 'the task was cancelled');
  }

  async fail(message: string): Promise<void> {
    this.runner.abort('shutdown', message);
    await this.done;
  }

  async reclaimLease(): Promise<boolean> {
    const record = this.record;
    if (!record) return false;
    // The sweep holds the lapsed lease under no replica's name: give it up, then hold it as before.
    await this.ctx.store.releaseLease(record.handle, TAKEN_LEASE_HOLDER);
    return this.ctx.store.holdLease(record.handle, this.ctx.replica, Date.now() + this.settings.leaseMs);
  }

  private async finish(outcome: CallOutcome): Promise<void> {
    const record = await this.attachment;
    const callMs = performance.now() - this.startedAt;
    this.ctx.metrics.providedCallDuration.observe({ upstream: this.settings.upstream }, callMs / 1000);
    const step = record ? stepForOutcome(outcome, this.settings.wire, this.settings.limits, callMs) : undefined;
    if (!record || step?.kind === 'retry') {
      // The next call of the same task takes the lease over (same replica): not released here.
      // Until the next step is taken the call stays held, so that a shutdown meanwhile waits for
      // it (call-again.ts: past the shutdown no next call starts, the task ends failed).
      this.stop(true);
      if (record && step?.kind === 'retry') await this.settings.retry(record, this.runner, step.requestState, callMs);
      this.unhold();
      return;
    }
    // The lease is kept while the outcome is being written: it may take a while if the store is away.
    if (step?.kind === 'decide') await this.writeOutcome(record, step.decide);
    this.stop();
    await this.ctx.store.releaseLease(record.handle, this.ctx.replica).catch(() => undefined);
  }

  /**
   * Writes the outcome into the task; while the store is away, tries again every second, up to
   * OUTCOME_WRITE_BUDGET_MS. If the lease lapses meanwhile, another replica ends the task
   * failed, and this write then finds it ended and changes nothing.
   */
  private async writeOutcome(record: TaskRecord, decide: Parameters<typeof transition>[2]): Promise<void> {
    const until = Date.now() + Math.max(OUTCOME_WRITE_BUDGET_MS, this.settings.leaseMs * 4);
    for (;;) {
      try {
        const moved = await transition(this.ctx.store, record.handle, decide);
        if (moved) this.observe(moved.before.record, moved.status);
        return;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError) || Date.now() > until) {
          this.ctx.logger.error({ err: error, upstream: this.settings.upstream, tool: record.tool }, 'could not write a provided task\'s outcome');
          return;
        }
        await sleep(1000);
      }
    }
  }

  private observe(before: TaskRecord, status: TaskRecord['status']): void {
    this.ctx.observer.statusChanged(before, before.status, status);
    if (isTerminalStatus(status)) this.ctx.metrics.providedTasksEnded.inc({ upstream: this.settings.upstream, outcome: status });
  }

  /** `keepHeld`: still in ctx.held until unhold(). */
  private stop(keepHeld = false): void {
    clearInterval(this.leaseTimer);
    this.unsubscribe?.();
    if (this.progress) clearTimeout(this.progress.timer);
    this.progress = undefined;
    this.ctx.inFlight--;
    this.ctx.metrics.providedCallsRunning.dec();
    if (!keepHeld) this.unhold();
  }

  /** No longer held here (unless something else holds the task now, the pause before its next call). */
  private unhold(): void {
    if (this.record && this.ctx.held.get(this.record.handle) === this) this.ctx.held.delete(this.record.handle);
  }

  /** Renews the lease; a refusal means the task ended or moved on without this call. */
  private async holdLease(): Promise<void> {
    const record = this.record;
    if (!record) return;
    try {
      const held = await this.ctx.store.holdLease(record.handle, this.ctx.replica, Date.now() + this.settings.leaseMs);
      if (!held) this.runner.abort('aborted', 'the task ended or is no longer held by this replica');
    } catch (error) {
      // The store is away: the call goes on, and the next renewal tries again. Should the
      // lease lapse meanwhile, another replica ends the task and the next renewal stops this.
      this.ctx.logger.warn({ err: error, upstream: this.settings.upstream }, 'could not renew a provided task\'s lease');
    }
  }

  /** Something changed the task (any replica): a cancel or its end stops the call. */
  private async check(): Promise<void> {
    const record = this.record;
    if (!record) return;
    try {
      const now = await this.ctx.store.getTask(record.handle);
      if (!now) this.runner.abort('aborted', 'the task is gone');
      else if (now.status === 'cancelled') await this.cancel();
    } catch {
      // The next announcement, or the lease renewal, checks again.
    }
  }

  private noteProgress(text: string): void {
    const record = this.record;
    if (!record) return;
    if (this.progress) {
      this.progress.text = text;
      return;
    }
    const timer = setTimeout(() => {
      const latest = this.progress?.text ?? text;
      this.progress = undefined;
      const statusMessage = sanitizeStatusMessage(latest, this.settings.limits.statusMessageMaxLength);
      // The store refuses it once the task has ended (a cancel, the outcome, on any replica):
      // progress that arrives late never overwrites the end.
      this.ctx.store
        .writeProvidedProgress(record.handle, statusMessage, new Date().toISOString())
        .then((written) => (written ? this.ctx.store.events.publish(record.handle) : undefined))
        .catch(() => undefined);
    }, PROGRESS_WRITE_MS);
    timer.unref();
    this.progress = { text, timer };
  }

  /**
   * Legacy: a question of the backend's (elicitation, sampling) in the middle of the call. It goes
   * to the client on the task's tasks/result stream under an id of the gateway's, with the
   * handle in its related-task _meta; the client's answer is routed back to this call's
   * session (task-requests.ts, routeClientResponse) and the task goes back to working.
   */
  private async relayServerRequest(request: JsonRpcRequest): Promise<void> {
    if (this.settings.wire.input !== 'server-requests') return;
    // Asked before the call is a task (a call held for a client without tasks, until it is
    // detached): it waits for the task, and the stream with it. A call that stays plain has no
    // task to ask through: the backend is told so rather than left waiting.
    const record = this.record ?? (await this.attachment);
    if (!record) {
      await this.runner.refuseServerRequest(request.id, 'the gateway cannot relay this request: the call it belongs to has no task the client can reach');
      return;
    }
    const id = mintServerRequestId();
    const params = isObject(request.params) ? request.params : {};
    const meta = isObject(params._meta) ? params._meta : {};
    const relayed = { jsonrpc: '2.0', id, method: request.method, params: { ...params, _meta: { ...meta, [RELATED_TASK]: { taskId: record.handle } } } };
    const maxBytes = this.settings.limits.maxResultBytes;
    // The questions are kept with the task (and served on its tasks/result streams) until
    // answered: together they are held to the cap on what a task keeps (call-outcome.ts).
    const tooLarge = overCap('the backend\'s questions', 'are', [relayed], maxBytes);
    if (tooLarge) return this.runner.abort('bad_reply', tooLarge);
    await this.ctx.store.putServerRequest(
      id,
      { upstream: record.upstream, instance: this.runner.origin, upstreamSession: record.upstreamSession, upstreamId: request.id, handle: record.handle },
      SERVER_REQUEST_TTL_MS,
    );
    const moved = await transition(this.ctx.store, record.handle, (view) => {
      if (isTerminalStatus(view.record.status)) return undefined;
      const pending = view.state.pendingRequests ?? [];
      if (pending.length >= MAX_PENDING_REQUESTS) {
        this.runner.abort('bad_reply', `the backend asked more than ${MAX_PENDING_REQUESTS} questions without an answer`);
        return undefined;
      }
      const over = overCap('the backend\'s questions', 'are', [...pending, relayed], maxBytes);
      if (over) {
        this.runner.abort('bad_reply', over);
        return undefined;
      }
      return { patch: { status: 'input_required' }, state: { ...view.state, pendingRequests: [...pending, relayed] } };
    });
    if (moved) this.observe(moved.before.record, moved.status);
  }
}

/** Waits for `done`, at most `ms`. */
export async function settledWithin(done: Promise<void>, ms: number): Promise<boolean> {
  const timeout = sleep(ms, false, { ref: false });
  return Promise.race([done.then(() => true), timeout]);
}
