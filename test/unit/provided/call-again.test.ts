/**
 * 2026: a call made again when the backend answers with a requestState alone
 * (src/provided/call-again.ts), against the real memory store: the round counted, the pause,
 * the bounds (MAX_ROUNDS, the task's timeout), and what ends a pause (cancel, shutdown).
 * The next call itself is the caller's: `start` records what it was asked to start.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createMetrics } from '../../../src/observability/metrics.js';
import { callAgain, overTimeout, pauseBefore, type CallAgain, type CallAgainContext, type CallAgainSettings, type NextCall } from '../../../src/provided/call-again.js';
import { MAX_ROUNDS, TOO_MANY_ROUNDS } from '../../../src/provided/call-outcome.js';
import { SHUTDOWN_MESSAGE } from '../../../src/provided/transitions.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { ProvidedState } from '../../../src/task-model/provided-state.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { quietTaskObserver } from '../../support/task-observer.js';
import { waitFor } from '../../support/wait.js';
import { providedRecord, providedState } from '../../support/task-records.js';

const SETTINGS: CallAgainSettings = { upstream: 'tools', leaseMs: 15_000, timeoutMs: 600_000, limits: { statusMessageMaxLength: 200 } };

let store: MemoryStore;
let ctx: CallAgainContext & { closing: boolean };
beforeEach(() => {
  store = new MemoryStore({ maxSessions: 10, maxTasks: 10 });
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics({ defaultMetrics: false });
  const observer = quietTaskObserver(metrics, logger);
  ctx = { store, logger, observer, metrics, replica: 'replica-1', held: new Map(), closing: false };
});
afterEach(() => store.close());

/** A running 2026 task whose call this replica holds, and the call-again request for it. */
async function running(state: Partial<ProvidedState> = {}, record: Partial<TaskRecord> = {}) {
  const made = providedRecord({ era: 'modern', ...record });
  assert.equal(await store.createProvidedTask(made, providedState(state), 10), 'created');
  assert.equal(await store.holdLease(made.handle, ctx.replica, Date.now() + SETTINGS.leaseMs), true);
  const started: NextCall[] = [];
  const policy = { held: 0, left: 0 };
  const again: CallAgain = {
    record: made,
    requestState: 'opaque-again',
    callMs: 40,
    holdPolicy: () => {
      policy.held++;
      return () => void policy.left++;
    },
    start: (next) => void started.push(next),
  };
  return { record: made, again, started, policy };
}

/** Whether another replica could take the task's lease now: this one gave it up, or it lapsed. */
async function leaseFree(handle: string): Promise<boolean> {
  return store.holdLease(handle, 'replica-2', Date.now() + 1000);
}

describe('pauseBefore', () => {
  it('waits 100 ms before the first call made again, doubling each time, at most 5 s', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8].map(pauseBefore), [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
  });

  it('stays within its bounds for counts that are out of range', () => {
    assert.equal(pauseBefore(0), 100);
    assert.equal(pauseBefore(-3), 100);
    assert.equal(pauseBefore(1e9), 5000, 'no overflow to Infinity on a huge count');
    assert.equal(pauseBefore(Number.MAX_SAFE_INTEGER), 5000);
  });
});

describe('overTimeout', () => {
  it('says which bound the task reached, over how many calls', () => {
    assert.equal(overTimeout(600_000, 7), 'the backend did not finish within the task\'s timeout (600000 ms over 7 calls)');
  });
});

describe('callAgain', () => {
  it('counts the round, pauses, and starts the next call with the requestState and what is left of the timeout', async () => {
    const { record, again, started, policy } = await running({ round: 2, retries: 0, spentMs: 1000 });
    const before = Date.now();
    await callAgain(ctx, SETTINGS, again);
    const view = await store.readProvidedTask(record.handle);
    assert.equal(view?.state.round, 3);
    assert.equal(view?.state.retries, 1);
    assert.equal(view?.state.spentMs, 1000 + 40 + 100, 'the call\'s time and the pause count against the timeout');
    assert.equal(view?.record.status, 'working');
    assert.ok(ctx.held.has(record.handle), 'the pause is held like a call');
    assert.equal(started.length, 0, 'not before the pause');
    await waitFor(() => started.length === 1, 'the next call after the pause', 5000);
    assert.ok(Date.now() - before >= 100 - 5, 'after the 100 ms pause');
    const [next] = started;
    assert.equal(next!.requestState, 'opaque-again');
    assert.deepEqual(next!.call, providedState().call);
    assert.equal(next!.record.handle, record.handle);
    assert.ok(next!.timeoutMs <= 600_000 - 1140 && next!.timeoutMs > 0, String(next!.timeoutMs));
    assert.equal(next!.timeoutMessage, overTimeout(600_000, 4));
    await ctx.held.get(record.handle)?.done;
    await waitFor(() => !ctx.held.has(record.handle), 'the pause let go once the next call started');
    assert.deepEqual(policy, { held: 1, left: 1 }, 'the policy was held until the next call was started');
    assert.equal(await leaseFree(record.handle), false, 'the lease stays with this replica for the next call');
  });

  it('gives the next call no more than the task has left to live', async () => {
    const { again, started } = await running({}, { expiresAt: Date.now() + 2000 });
    await callAgain(ctx, SETTINGS, again);
    await waitFor(() => started.length === 1, 'the next call', 5000);
    assert.ok(started[0]!.timeoutMs <= 2000, String(started[0]!.timeoutMs));
  });

  it(`ends the task failed past ${MAX_ROUNDS} rounds, without a pause or another call`, async () => {
    const { record, again, started, policy } = await running({ round: MAX_ROUNDS });
    await callAgain(ctx, SETTINGS, again);
    const view = await store.readProvidedTask(record.handle);
    assert.equal(view?.record.status, 'failed');
    assert.equal(view?.record.statusMessage, TOO_MANY_ROUNDS);
    assert.deepEqual(view?.state.outcome, { error: { code: -32603, message: TOO_MANY_ROUNDS } });
    assert.equal(ctx.held.size, 0);
    assert.equal(started.length, 0);
    assert.deepEqual(policy, { held: 1, left: 1 });
    const ended = (await ctx.metrics.providedTasksEnded.get()).values;
    assert.deepEqual(ended.map((v) => [v.labels, v.value]), [[{ upstream: 'tools', outcome: 'failed' }, 1]]);
  });

  it('ends the task failed once its backend time, the pause counted, reaches the timeout', async () => {
    const { record, again, started } = await running({ round: 4, spentMs: SETTINGS.timeoutMs - 140 });
    await callAgain(ctx, SETTINGS, again);
    const view = await store.readProvidedTask(record.handle);
    assert.equal(view?.record.status, 'failed');
    assert.equal(view?.record.statusMessage, overTimeout(SETTINGS.timeoutMs, 5));
    assert.equal(started.length, 0);
  });

  it('ends the task failed at once when the gateway is shutting down', async () => {
    ctx.closing = true;
    const { record, again, started, policy } = await running();
    await callAgain(ctx, SETTINGS, again);
    assert.equal((await store.getTask(record.handle))?.status, 'failed');
    assert.equal((await store.getTask(record.handle))?.statusMessage, SHUTDOWN_MESSAGE);
    assert.equal(started.length, 0);
    assert.deepEqual(policy, { held: 1, left: 1 });
  });

  it('does nothing for a task that ended meanwhile, and gives up its lease', async () => {
    const { record, again, started, policy } = await running();
    await store.writeProvidedTask(record.handle, 1, { status: 'cancelled' }, providedState());
    await callAgain(ctx, SETTINGS, again);
    assert.equal((await store.getTask(record.handle))?.status, 'cancelled');
    assert.equal(ctx.held.size, 0);
    assert.equal(started.length, 0);
    assert.deepEqual(policy, { held: 1, left: 1 });
  });

  it('stops at a cancel during the pause: no next call, the lease given up', async () => {
    const { record, again, started, policy } = await running();
    await callAgain(ctx, SETTINGS, again);
    const pause = ctx.held.get(record.handle);
    assert.ok(pause);
    await pause.cancel();
    assert.equal(ctx.held.has(record.handle), false);
    assert.deepEqual(policy, { held: 1, left: 1 });
    assert.equal(await leaseFree(record.handle), true);
    // The pause would have ended 100 ms on: wait well past it for a call that must not come.
    await assert.rejects(waitFor(() => started.length > 0, 'a call after the cancel', 400), /timed out/);
  });

  it('ends the task failed at a shutdown during the pause, as a running call\'s', async () => {
    const { record, again, started } = await running();
    await callAgain(ctx, SETTINGS, again);
    await ctx.held.get(record.handle)!.fail(SHUTDOWN_MESSAGE);
    const now = await store.getTask(record.handle);
    assert.equal(now?.status, 'failed');
    assert.equal(now?.statusMessage, SHUTDOWN_MESSAGE);
    assert.equal(started.length, 0);
  });

  it('does not start the next call when the gateway began shutting down during the pause', async () => {
    const { record, again, started } = await running();
    await callAgain(ctx, SETTINGS, again);
    const pause = ctx.held.get(record.handle)!;
    ctx.closing = true;
    // The pause's timer does not keep the process up (unref): the wait below does.
    await waitFor(() => !ctx.held.has(record.handle), 'the end of the pause', 5000);
    await pause.done;
    assert.equal(started.length, 0);
    assert.equal((await store.getTask(record.handle))?.status, 'failed');
  });

  it('leaves the task to the replica whose sweep took its lapsed lease', async () => {
    const { record, again, started } = await running();
    // Another replica holds the lease (this one's lapsed, and was taken over).
    await store.releaseLease(record.handle, ctx.replica);
    assert.equal(await store.holdLease(record.handle, 'replica-2', Date.now() + 60_000), true);
    await callAgain(ctx, SETTINGS, again);
    assert.equal(ctx.held.size, 0, 'no pause held: the lease is not this replica\'s');
    assert.equal(started.length, 0);
  });
});
