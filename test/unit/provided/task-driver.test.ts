/**
 * The driver of one gateway-run task's backend call (src/provided/task-driver.ts): a real call
 * to a scripted HTTP backend through undici, the task in the real memory store. What the call
 * writes into its task (outcome, progress, 2025 questions), and what stops it (a cancel from
 * any replica, a lease another replica holds, a shutdown).
 */
import type { ServerResponse } from 'node:http';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Agent } from 'undici';
import { createMetrics } from '../../../src/observability/metrics.js';
import { BackendSupport } from '../../../src/provided/backend-support.js';
import { startCall } from '../../../src/provided/call-start.js';
import { sendThrough } from '../../../src/upstream/gateway-send.js';
import { LegacyStatusPush } from '../../../src/provided/legacy-push/legacy-status-push.js';
import type { ProvidedContext } from '../../../src/provided/provided-context.js';
import { RELATED_TASK, TaskDriver, type DriverSettings } from '../../../src/provided/task-driver.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { Era } from '../../../src/mcp/era.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { replyEvents, replyJson, startScriptedBackend, type ScriptedBackend } from '../../support/scripted-backend.js';
import { quietTaskObserver } from '../../support/task-observer.js';
import { waitFor } from '../../support/wait.js';
import { providedRecord, providedState } from '../../support/task-records.js';
import { wireOf } from '../../../src/task-model/task-wire.js';

let backend: ScriptedBackend;
const agent = new Agent({ connections: 8 });
before(async () => {
  backend = await startScriptedBackend();
});
after(async () => {
  await backend.close();
  await agent.close();
});

let store: MemoryStore;
let ctx: ProvidedContext;
beforeEach(() => {
  store = new MemoryStore({ maxSessions: 10, maxTasks: 10 });
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics({ defaultMetrics: false });
  const observer = quietTaskObserver(metrics, logger);
  ctx = { store, logger, observer, metrics, replica: 'replica-1', support: new BackendSupport(), held: new Map(), inFlight: 0, closing: false, legacyPush: new LegacyStatusPush({ store, logger, metrics }) };
});
afterEach(async () => {
  backend.reset();
  await store.close();
});

/** A task of `era` and its driver, its call sent to the backend (attached unless `attach` is false). */
async function driven(era: Era, opts: { attach?: boolean; record?: Partial<TaskRecord>; beforeStart?: (record: TaskRecord) => Promise<unknown>; maxResultBytes?: number } = {}) {
  const record = providedRecord({ era, ...opts.record });
  assert.equal(await store.createProvidedTask(record, providedState(), 10), 'created');
  await opts.beforeStart?.(record);
  const version = era === 'legacy' ? '2025-11-25' : '2026-07-28';
  const target = { origin: backend.origin, send: sendThrough(agent, backend.origin, '/mcp'), headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': version }, hold: () => () => undefined };
  const retries: string[] = [];
  const settings: DriverSettings = {
    wire: wireOf(era),
    upstream: 'tools',
    leaseMs: 15_000,
    limits: { maxResultBytes: opts.maxResultBytes ?? 4096, statusMessageMaxLength: 200 },
    timeoutMs: 60_000,
    retry: async (_record, _runner, requestState) => void retries.push(requestState),
  };
  const driver = new TaskDriver(ctx, (reports) => startCall(target, { call: providedState().call!, timeoutMs: 10_000 }, { maxResponseBytes: 64 * 1024, maxSseEventBytes: 64 * 1024 }, reports), settings);
  if (opts.attach !== false) driver.attach(record);
  return { record, driver, retries };
}

/**
 * From now on the backend holds each tools/call open as an event stream (and takes anything
 * else with a 202); `next()` waits for the next call's stream.
 */
function holdCallsOpen(): { next: () => Promise<{ res: ServerResponse; id: unknown }> } {
  const open: { res: ServerResponse; id: unknown }[] = [];
  backend.answer = (body, res) => {
    if (body.method !== 'tools/call') return void res.writeHead(202).end();
    replyEvents(res, [], false);
    open.push({ res, id: body.id });
  };
  return {
    next: async () => {
      await waitFor(() => open.length > 0, 'the call to arrive');
      return open.shift()!;
    },
  };
}

describe('TaskDriver: outcomes', () => {
  it('writes the answer into the task, then lets the call go: lease, hold and count', async () => {
    backend.answer = (body, res) => replyJson(res, { jsonrpc: '2.0', id: body.id, result: { content: [{ type: 'text', text: '42' }] } });
    const { record, driver } = await driven('modern');
    assert.equal(ctx.held.get(record.handle), driver);
    assert.equal(ctx.inFlight, 1);
    await driver.done;
    const view = await store.readProvidedTask(record.handle);
    assert.equal(view?.record.status, 'completed');
    assert.deepEqual(view?.state.outcome, { result: { content: [{ type: 'text', text: '42' }] } });
    assert.equal(ctx.held.has(record.handle), false);
    assert.equal(ctx.inFlight, 0);
    assert.equal(await store.holdLease(record.handle, 'replica-2', Date.now() + 1000), false, 'ended: nobody holds it again');
    const ended = (await ctx.metrics.providedTasksEnded.get()).values;
    assert.deepEqual(ended.map((v) => [v.labels, v.value]), [[{ upstream: 'tools', outcome: 'completed' }, 1]]);
  });

  it('hands a requestState alone to the call again, keeping the task held until it is taken', async () => {
    backend.answer = (body, res) => replyJson(res, { jsonrpc: '2.0', id: body.id, result: { resultType: 'input_required', requestState: 'again-1' } });
    const { record, driver, retries } = await driven('modern');
    await driver.done;
    assert.deepEqual(retries, ['again-1']);
    assert.equal((await store.getTask(record.handle))?.status, 'working', 'the call again decides what comes next');
  });

  it('writes nothing for a call that was never attached to a task (a 2026 answer within promoteAfter)', async () => {
    backend.answer = (body, res) => replyJson(res, { jsonrpc: '2.0', id: body.id, result: { content: [] } });
    const { record, driver } = await driven('modern', { attach: false });
    driver.release();
    await driver.done;
    assert.equal((await store.getTask(record.handle))?.status, 'working');
    assert.equal(ctx.held.size, 0);
    assert.equal(ctx.inFlight, 0);
  });

  it('turns the backend\'s progress into the task\'s status message, the latest text winning', async () => {
    const calls = holdCallsOpen();
    const { record, driver } = await driven('modern');
    const { res, id } = await calls.next();
    replyEvents(res, ['first', 'second', 'third'].map((message, i) => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: id, progress: i, message } })), false);
    await waitFor(async () => (await store.getTask(record.handle))?.statusMessage === 'third', 'the latest progress written');
    replyEvents(res, [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: id, message: 'line\nbreak\u202e' } }], false);
    await waitFor(async () => (await store.getTask(record.handle))?.statusMessage === 'line break', 'progress made safe');
    replyEvents(res, [{ jsonrpc: '2.0', id, result: { content: [] } }]);
    await driver.done;
    assert.equal((await store.getTask(record.handle))?.status, 'completed');
  });
});

describe('TaskDriver: stopping the call', () => {
  it('stops the call when any replica cancels the task, and leaves the cancel as written', async () => {
    const calls = holdCallsOpen();
    const { record, driver } = await driven('modern');
    await calls.next();
    const view = await store.readProvidedTask(record.handle);
    await store.writeProvidedTask(record.handle, view!.rev, { status: 'cancelled' }, view!.state);
    await store.events.publish(record.handle); // another replica's cancel, announced
    await driver.done;
    assert.deepEqual(await driver.runner.outcome, { kind: 'failure', failure: 'aborted', message: 'the task was cancelled' });
    assert.equal((await store.getTask(record.handle))?.status, 'cancelled');
  });

  it('stops the call at once when the task is gone', async () => {
    const calls = holdCallsOpen();
    const { record, driver } = await driven('modern');
    await calls.next();
    await store.deleteTask(record.handle);
    await store.events.publish(record.handle);
    await driver.done;
    assert.equal((await driver.runner.outcome).kind, 'failure');
  });

  it('never runs a call whose task another replica holds: the lease refused stops it', async () => {
    const calls = holdCallsOpen();
    const { record, driver } = await driven('modern', { beforeStart: (r) => store.holdLease(r.handle, 'replica-2', Date.now() + 60_000) });
    await calls.next();
    await driver.done;
    assert.deepEqual(await driver.runner.outcome, { kind: 'failure', failure: 'aborted', message: 'the task ended or is no longer held by this replica' });
    assert.equal((await store.getTask(record.handle))?.status, 'working', 'the holder decides the task, not this replica');
  });

  it('ends the task failed with the shutdown\'s message', async () => {
    const calls = holdCallsOpen();
    const { record, driver } = await driven('modern');
    await calls.next();
    await driver.fail('the gateway shut down before the backend answered');
    const now = await store.getTask(record.handle);
    assert.equal(now?.status, 'failed');
    assert.equal(now?.statusMessage, 'the gateway shut down before the backend answered');
  });
});

describe('TaskDriver: 2025 questions mid-call', () => {
  it('relays the backend\'s question under a gateway id, with the task in its related-task _meta, and routes the answer back', async () => {
    const calls = holdCallsOpen();
    const { record, driver } = await driven('legacy', { record: { upstreamSession: 'backend-session' } });
    const { res, id } = await calls.next();
    replyEvents(res, [{ jsonrpc: '2.0', id: 'srv-1', method: 'elicitation/create', params: { message: 'Your name?', _meta: { other: 1 } } }], false);
    await waitFor(async () => (await store.getTask(record.handle))?.status === 'input_required', 'the task waiting for input');
    const pending = (await store.readProvidedTask(record.handle))?.state.pendingRequests ?? [];
    assert.equal(pending.length, 1);
    const [question] = pending;
    assert.equal(question!.method, 'elicitation/create');
    assert.notEqual(question!.id, 'srv-1', 'never the backend\'s own id');
    assert.deepEqual((question!.params as { _meta: unknown })._meta, { other: 1, [RELATED_TASK]: { taskId: record.handle } });
    const route = await store.takeServerRequest(String(question!.id));
    assert.deepEqual(route, { upstream: record.upstream, instance: backend.origin, upstreamSession: 'backend-session', upstreamId: 'srv-1', handle: record.handle });
    replyEvents(res, [{ jsonrpc: '2.0', id, result: { content: [] } }]);
    await driver.done;
    const ended = await store.readProvidedTask(record.handle);
    assert.equal(ended?.record.status, 'completed');
    assert.equal(ended?.state.pendingRequests, undefined, 'nothing left pending once the task ended');
  });

  it('ends the task failed when the backend asks more than 32 questions without an answer', async () => {
    const calls = holdCallsOpen();
    const { record, driver } = await driven('legacy', { maxResultBytes: 1024 * 1024 });
    const { res } = await calls.next();
    replyEvents(res, Array.from({ length: 33 }, (_, i) => ({ jsonrpc: '2.0', id: `srv-${i}`, method: 'elicitation/create', params: { message: `q${i}` } })), false);
    await driver.done;
    const now = await store.getTask(record.handle);
    assert.equal(now?.status, 'failed');
    assert.equal(now?.statusMessage, 'the backend asked more than 32 questions without an answer');
  });

  it('ends the task failed when the questions left pending outgrow maxResultBytes, together', async () => {
    const calls = holdCallsOpen();
    const { record, driver } = await driven('legacy');
    const { res } = await calls.next();
    const question = (i: number) => ({ jsonrpc: '2.0', id: `srv-${i}`, method: 'elicitation/create', params: { message: 'q'.repeat(1500) } });
    replyEvents(res, [question(1), question(2)], false);
    await waitFor(async () => (await store.readProvidedTask(record.handle))?.state.pendingRequests?.length === 2, 'two questions pending');
    replyEvents(res, [question(3)], false);
    await driver.done;
    const now = await store.readProvidedTask(record.handle);
    assert.equal(now?.record.status, 'failed');
    assert.match(now!.record.statusMessage!, /^the backend's questions \(\d+ bytes\) are larger than tasks\.provided\.maxResultBytes \(4096 bytes\)$/);
    assert.equal(now?.state.pendingRequests, undefined, 'none of them kept');
  });

  it('refuses the backend\'s question of a call that has no task to ask through', async () => {
    const calls = holdCallsOpen();
    const { driver } = await driven('legacy', { attach: false });
    const { res, id } = await calls.next();
    replyEvents(res, [{ jsonrpc: '2.0', id: 'srv-9', method: 'sampling/createMessage', params: {} }], false);
    driver.release();
    await waitFor(() => backend.received.some((r) => r.body.id === 'srv-9'), 'the refusal sent to the backend');
    const refusal = backend.received.find((r) => r.body.id === 'srv-9')!;
    assert.equal((refusal.body.error as { code: number }).code, -32603);
    replyEvents(res, [{ jsonrpc: '2.0', id, result: { content: [] } }]);
    await driver.done;
  });
});
