/**
 * 2026-07-28: a backend that answers input_required with a requestState alone asks for its call
 * again, with nothing for the client to answer. A backend that does so at once, forever, must
 * not be called forever at the rate it answers (issue #24: about 2,900 calls in 5 s from one
 * task). So each such call:
 *   - is a round, counted with the rounds of input (MAX_ROUNDS in all);
 *   - comes after a pause, longer each time (100 ms, doubling, at most 5 s);
 *   - gets what is left of the task's timeout, the pauses counted, not a timeout of its own
 *     (ProvidedState.spentMs): the task's backend time is bounded, not each call's.
 * Past either bound the task ends failed, saying which.
 *
 * During the pause the task holds no call but keeps its lease (to the pause's end plus a
 * lease: should this replica die meanwhile, the lease lapses and another ends the task), and
 * the pause is held like a call (ProvidedContext.held), so a cancel, the task's expiry and a
 * shutdown end it as they end a call.
 *
 * The next call itself is started by the caller (CallAgain.start: provided-tasks.ts builds its
 * driver): this file knows the task's rounds and time, not how a call is made.
 */
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { TaskObserver } from '../observability/task-observer.js';
import { TAKEN_LEASE_HOLDER } from '../store/provided-store.js';
import type { Store } from '../store/store.js';
import type { ProvidedCall } from '../task-model/provided-state.js';
import { isTerminalStatus, type TaskRecord } from '../task-model/task-record.js';
import { MAX_ROUNDS, TOO_MANY_ROUNDS } from './call-outcome.js';
import type { HeldCall } from './held-call.js';
import { ending, failureOutcome, SHUTDOWN_MESSAGE, transition } from './transitions.js';

const FIRST_PAUSE_MS = 100;
const MAX_PAUSE_MS = 5000;

/** The pause before the `retries`-th call made again without input. */
export function pauseBefore(retries: number): number {
  return Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** Math.min(Math.max(retries - 1, 0), 16));
}

/** Why a task ends failed once its backend time reaches upstreams.*.providedTasks.timeout. */
export function overTimeout(timeoutMs: number, calls: number): string {
  return `the backend did not finish within the task's timeout (${timeoutMs} ms over ${calls} calls)`;
}

/** What of the room's context a call made again needs (ProvidedContext has all of it). */
export interface CallAgainContext {
  readonly store: Store;
  readonly logger: Logger;
  readonly observer: TaskObserver;
  readonly metrics: GatewayMetrics;
  readonly replica: string;
  readonly held: Map<string, HeldCall>;
  readonly closing: boolean;
}

/** What of a call's settings it needs (DriverSettings has all of it). */
export interface CallAgainSettings {
  readonly upstream: string;
  readonly leaseMs: number;
  /** upstreams.*.providedTasks.timeout: the task's backend time, all its calls together. */
  readonly timeoutMs: number;
  readonly limits: { readonly statusMessageMaxLength: number };
}

/** The next call, as the caller is to start it. */
export interface NextCall {
  readonly record: TaskRecord;
  readonly call: ProvidedCall;
  readonly requestState: string;
  /** What is left of the task's timeout. */
  readonly timeoutMs: number;
  readonly timeoutMessage: string;
}

export interface CallAgain {
  readonly record: TaskRecord;
  readonly requestState: string;
  /** How long the call that answered with the requestState took. */
  readonly callMs: number;
  /** Keeps that call's policy (and agent) open until the function it returns is called. */
  readonly holdPolicy: () => () => void;
  /** Starts the next call (a driver of its own, attached to the task). */
  readonly start: (next: NextCall) => void;
}

/** Counts the round and pauses before the next call, or ends the task past a bound; settles once decided. */
export async function callAgain(ctx: CallAgainContext, settings: CallAgainSettings, again: CallAgain): Promise<void> {
  const { handle } = again.record;
  // The previous call's policy (and agent) stays open until the next call holds it.
  const leavePolicy = again.holdPolicy();
  let handedOver = false;
  try {
    if (ctx.closing) return await endFailed(ctx, settings, handle, SHUTDOWN_MESSAGE);
    let pauseMs = 0;
    const moved = await transition(ctx.store, handle, (view) => {
      if (isTerminalStatus(view.record.status) || !view.state.call) return undefined;
      const round = view.state.round + 1;
      const retries = (view.state.retries ?? 0) + 1;
      pauseMs = pauseBefore(retries);
      const spentMs = (view.state.spentMs ?? 0) + again.callMs + pauseMs;
      // `round` calls were made so far: the first and one per earlier round.
      const message = round > MAX_ROUNDS ? TOO_MANY_ROUNDS : spentMs >= settings.timeoutMs ? overTimeout(settings.timeoutMs, round) : undefined;
      if (message) return ending('failed', failureOutcome(message), message, settings.limits.statusMessageMaxLength)(view);
      return { patch: {}, state: { ...view.state, round, retries, spentMs } };
    });
    if (moved?.status === 'failed') observeFailed(ctx, settings, moved.before.record);
    if (!moved || moved.status === 'failed') return await release(ctx, handle);
    // Refused: the task ended meanwhile, or another replica's sweep took it.
    if (!(await ctx.store.holdLease(handle, ctx.replica, Date.now() + pauseMs + settings.leaseMs))) return;
    // Checked again after the last wait: a shutdown that began meanwhile did not see this pause
    // (it is registered in the same step as this check), so it must not start.
    if (ctx.closing) return await endFailed(ctx, settings, handle, SHUTDOWN_MESSAGE);
    handedOver = true;
    const then = (step: () => Promise<void>) => async () => {
      try {
        await step();
      } finally {
        leavePolicy();
      }
    };
    new CallPause(ctx, handle, settings.leaseMs, pauseMs, {
      next: then(() => nextCall(ctx, settings, again)),
      fail: (message) => then(() => endFailed(ctx, settings, handle, message))(),
      stop: then(() => release(ctx, handle)),
    });
  } finally {
    if (!handedOver) leavePolicy();
  }
}

/** After the pause: the call again, unless the task ended meanwhile or the gateway is closing. */
async function nextCall(ctx: CallAgainContext, settings: CallAgainSettings, again: CallAgain): Promise<void> {
  const { handle } = again.record;
  if (ctx.closing) return endFailed(ctx, settings, handle, SHUTDOWN_MESSAGE);
  const view = await ctx.store.readProvidedTask(handle);
  const call = view?.state.call;
  if (!view || !call || isTerminalStatus(view.record.status)) return release(ctx, handle);
  // Again after the read: the call starts in the same step as this check, or not at all.
  if (ctx.closing) return endFailed(ctx, settings, handle, SHUTDOWN_MESSAGE);
  const timeoutMs = Math.max(1, Math.min(settings.timeoutMs - (view.state.spentMs ?? 0), view.record.expiresAt - Date.now()));
  again.start({ record: view.record, call, requestState: again.requestState, timeoutMs, timeoutMessage: overTimeout(settings.timeoutMs, view.state.round + 1) });
}

async function endFailed(ctx: CallAgainContext, settings: CallAgainSettings, handle: string, message: string): Promise<void> {
  const moved = await transition(ctx.store, handle, ending('failed', failureOutcome(message), message, settings.limits.statusMessageMaxLength));
  if (moved) observeFailed(ctx, settings, moved.before.record);
  await release(ctx, handle);
}

function observeFailed(ctx: CallAgainContext, settings: CallAgainSettings, before: TaskRecord): void {
  ctx.observer.statusChanged(before, before.status, 'failed');
  ctx.metrics.providedTasksEnded.inc({ upstream: settings.upstream, outcome: 'failed' });
}

async function release(ctx: CallAgainContext, handle: string): Promise<void> {
  await ctx.store.releaseLease(handle, ctx.replica).catch(() => undefined);
}

/** How a pause ends: the next call, the task failed (shutdown), or nothing more (cancelled, gone). */
interface PauseEnds {
  next(): Promise<void>;
  fail(message: string): Promise<void>;
  stop(): Promise<void>;
}

/** The wait before a task's next call, held (ctx.held) as its call would be. */
class CallPause implements HeldCall {
  readonly done: Promise<void>;
  private settle!: () => void;
  private readonly timer: NodeJS.Timeout;
  private readonly endsAt: number;
  private over = false;

  constructor(
    private readonly ctx: CallAgainContext,
    private readonly handle: string,
    private readonly leaseMs: number,
    pauseMs: number,
    private readonly ends: PauseEnds,
  ) {
    this.done = new Promise((resolve) => (this.settle = resolve));
    this.endsAt = Date.now() + pauseMs;
    this.timer = setTimeout(() => void this.end(() => ends.next()), pauseMs);
    this.timer.unref();
    ctx.held.set(handle, this);
  }

  /** The task was cancelled or is gone: there is no next call. */
  async cancel(): Promise<void> {
    await this.end(() => this.ends.stop());
  }

  /** Shutdown: the task ends failed, as a running call's does. */
  async fail(message: string): Promise<void> {
    await this.end(() => this.ends.fail(message));
  }

  /** This replica stalled past the lease, but the pause is its own: hold the lease again to its end. */
  async reclaimLease(): Promise<boolean> {
    await this.ctx.store.releaseLease(this.handle, TAKEN_LEASE_HOLDER);
    return this.ctx.store.holdLease(this.handle, this.ctx.replica, Math.max(this.endsAt, Date.now()) + this.leaseMs);
  }

  private async end(step: () => Promise<void>): Promise<void> {
    if (this.over) return this.done;
    this.over = true;
    clearTimeout(this.timer);
    try {
      await step();
    } catch (error) {
      this.ctx.logger.warn({ err: error }, 'a provided task\'s next call could not be made');
    } finally {
      // Held until the step is done (the next call's driver then holds the task): a shutdown
      // meanwhile waits for it, as it waits for a call.
      if (this.ctx.held.get(this.handle) === this) this.ctx.held.delete(this.handle);
      this.settle();
    }
  }
}
