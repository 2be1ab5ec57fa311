/**
 * tasks/get, tasks/cancel and tasks/update of a task the gateway runs itself
 * (src/provided/task-answers.ts), answered from the real memory store. The request stands for
 * the part of the request context these answers write (statusSeen) and read (snapshotTag).
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { tasksSchema } from '../../../src/config/sections/tasks.js';
import { GatewayError } from '../../../src/errors.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import { BackendSupport } from '../../../src/provided/backend-support.js';
import type { HeldCall } from '../../../src/provided/held-call.js';
import { LegacyStatusPush } from '../../../src/provided/legacy-push/legacy-status-push.js';
import type { ProvidedContext } from '../../../src/provided/provided-context.js';
import { answerCancel, answerGet, applyUpdate } from '../../../src/provided/task-answers.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { ProvidedState } from '../../../src/task-model/provided-state.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import type { StageDeps } from '../../../src/tasks/extension-points.js';
import type { TaskDeps } from '../../../src/tasks/task-context.js';
import { quietTaskObserver } from '../../support/task-observer.js';
import { providedRecord, providedState } from '../../support/task-records.js';
import { taskRequest } from '../../support/task-request.js';
import type { TaskRequest } from '../../../src/tasks/task-request.js';

let store: MemoryStore;
let deps: StageDeps;
let ctx: ProvidedContext;
beforeEach(() => {
  store = new MemoryStore({ maxSessions: 10, maxTasks: 10 });
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics({ defaultMetrics: false });
  const observer = quietTaskObserver(metrics, logger);
  deps = { store, policy: tasksSchema.parse({}), authEnabled: true, logger, observer };
  ctx = { store, logger, observer, metrics, replica: 'replica-1', support: new BackendSupport(), held: new Map(), inFlight: 0, closing: false, legacyPush: new LegacyStatusPush({ store, logger, metrics }) };
});
afterEach(() => store.close());

/** A request as these answers see it. */
function request(): TaskRequest {
  return taskRequest();
}

async function created(record: Partial<TaskRecord>, state: Partial<ProvidedState> = {}): Promise<TaskRecord> {
  const made = providedRecord({ era: 'modern', ...record });
  assert.equal(await store.createProvidedTask(made, providedState(state), 10), 'created');
  return made;
}

/** A task asking two questions in its third round, as call-outcome.ts leaves it. */
function asking(): Promise<TaskRecord> {
  return created(
    { status: 'input_required' },
    {
      round: 3,
      callId: undefined,
      inputRequests: { '3.name': { method: 'elicitation/create' }, '3.age': { method: 'elicitation/create' } },
      inputKeys: { '3.name': 'name', '3.age': 'age' },
      inputResponses: {},
      requestState: 'opaque-state',
    },
  );
}

const ACK = { status: 200, body: { jsonrpc: '2.0', id: 9, result: { resultType: 'complete' } } };

describe('applyUpdate (2026 tasks/update)', () => {
  it('keeps a partial answer and waits for the rest, acknowledged, with nothing retried', async () => {
    const record = await asking();
    const { answer, retry } = await applyUpdate(deps, { id: 9, params: { taskId: record.handle, inputResponses: { '3.name': { action: 'accept', content: { name: 'Ada' } } } } }, record);
    assert.deepEqual(answer, ACK);
    assert.equal(retry, undefined);
    const view = await store.readProvidedTask(record.handle);
    assert.equal(view?.record.status, 'input_required');
    assert.deepEqual(view?.state.inputResponses, { '3.name': { action: 'accept', content: { name: 'Ada' } } });
  });

  it('once every question has an answer: working again, the call retried with the backend\'s own keys and its requestState', async () => {
    const record = await asking();
    await applyUpdate(deps, { id: 9, params: { inputResponses: { '3.name': 'Ada' } } }, record);
    const { answer, retry } = await applyUpdate(deps, { id: 9, params: { inputResponses: { '3.age': 36 } } }, record);
    assert.deepEqual(answer, ACK);
    assert.ok(retry);
    assert.deepEqual(retry.inputResponses, { name: 'Ada', age: 36 });
    assert.equal(retry.requestState, 'opaque-state');
    assert.equal(retry.record.status, 'working');
    const view = await store.readProvidedTask(record.handle);
    assert.deepEqual(retry.view, view, 'the view handed on is the task as stored, revision included');
    for (const gone of ['inputRequests', 'inputKeys', 'inputResponses', 'requestState'] as const) assert.equal(view?.state[gone], undefined, gone);
    assert.equal(view?.state.round, 3, 'the round is counted by the next answer, not here');
    assert.ok(view?.state.call, 'the call to make again is kept');
  });

  it('ignores keys the task did not ask, an earlier round\'s among them', async () => {
    const record = await asking();
    const { retry } = await applyUpdate(deps, { id: 9, params: JSON.parse('{"inputResponses":{"name":"x","2.name":"old","3.nope":1,"__proto__":{"polluted":true},"constructor":1}}') }, record);
    assert.equal(retry, undefined);
    const view = await store.readProvidedTask(record.handle);
    assert.deepEqual(view?.state.inputResponses, {});
    assert.equal(({} as { polluted?: boolean }).polluted, undefined);
  });

  it('answers a question asked under an object-like key as any other', async () => {
    const record = await created(
      { status: 'input_required' },
      { round: 1, inputRequests: { '1.__proto__': { method: 'elicitation/create' } }, inputKeys: { '1.__proto__': '__proto__' }, inputResponses: {}, requestState: 's' },
    );
    const { retry } = await applyUpdate(deps, { id: 9, params: JSON.parse('{"inputResponses":{"1.__proto__":"yes"}}') }, record);
    assert.ok(retry);
    assert.equal(Object.hasOwn(retry.inputResponses, '__proto__'), true);
    assert.equal(retry.inputResponses.__proto__, 'yes');
  });

  it('lets a later answer to the same question replace an earlier one, until the round is complete', async () => {
    const record = await asking();
    await applyUpdate(deps, { id: 9, params: { inputResponses: { '3.name': 'first' } } }, record);
    await applyUpdate(deps, { id: 9, params: { inputResponses: { '3.name': 'second' } } }, record);
    const { retry } = await applyUpdate(deps, { id: 9, params: { inputResponses: { '3.age': 1 } } }, record);
    assert.deepEqual(retry?.inputResponses, { name: 'second', age: 1 });
  });

  it('acknowledges malformed params and a task not waiting for input, and changes nothing', async () => {
    const record = await asking();
    for (const params of [undefined, null, 'x', [], { inputResponses: 'Ada' }, { inputResponses: ['Ada', 36] }, { inputResponses: null }]) {
      const { answer, retry } = await applyUpdate(deps, { id: 9, params: params as never }, record);
      assert.deepEqual(answer, ACK, JSON.stringify(params));
      assert.equal(retry, undefined);
    }
    assert.deepEqual((await store.readProvidedTask(record.handle))?.state.inputResponses, {});
    const working = await created({ status: 'working' });
    const before = await store.readProvidedTask(working.handle);
    assert.deepEqual(await applyUpdate(deps, { id: 9, params: { inputResponses: { '3.name': 'x' } } }, working), { answer: ACK });
    assert.deepEqual(await store.readProvidedTask(working.handle), before, 'not even the revision moved');
    const gone = providedRecord({ era: 'modern', status: 'input_required' });
    assert.deepEqual(await applyUpdate(deps, { id: 9, params: {} }, gone), { answer: ACK });
  });

  it('retries once when two updates complete the round together', async () => {
    const record = await asking();
    await applyUpdate(deps, { id: 9, params: { inputResponses: { '3.name': 'Ada' } } }, record);
    const both = await Promise.all([1, 2].map(() => applyUpdate(deps, { id: 9, params: { inputResponses: { '3.age': 36 } } }, record)));
    assert.equal(both.filter((update) => update.retry).length, 1);
  });
});

describe('answerCancel', () => {
  it('2025: cancels a running task before answering, with the task as cancelled, and stops the call held here', async () => {
    const record = await created({ era: 'legacy' });
    const cancels: string[] = [];
    const held: HeldCall = { cancel: async () => void cancels.push(record.handle), fail: async () => undefined, done: Promise.resolve(), reclaimLease: async () => false };
    ctx.held.set(record.handle, held);
    const req = request();
    const answer = await answerCancel(ctx, deps as TaskDeps, req, { kind: 'request', id: 4, method: 'tasks/cancel' }, record);
    assert.equal(answer.status, 200);
    const result = (answer.body as { result: Record<string, unknown> }).result;
    assert.equal(result.taskId, record.handle);
    assert.equal(result.status, 'cancelled');
    assert.equal(result.statusMessage, 'The task was cancelled by request.');
    assert.equal((await store.getTask(record.handle))?.status, 'cancelled', 'cancelled in the store before the answer');
    assert.deepEqual(cancels, [record.handle]);
    assert.equal(req.statusSeen, 'cancelled');
  });

  it('2025: refuses a task that ended, naming its status, and one that is gone', async () => {
    const record = await created({ era: 'legacy', status: 'completed' });
    await assert.rejects(answerCancel(ctx, deps as TaskDeps, request(), { kind: 'request', id: 4, method: 'tasks/cancel' }, record), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'TG_ERR_TASK_TERMINAL');
      assert.match(String(error.detail), /'completed'/);
      return true;
    });
    const gone = providedRecord({ era: 'legacy' });
    await assert.rejects(answerCancel(ctx, deps as TaskDeps, request(), { kind: 'request', id: 4, method: 'tasks/cancel' }, gone), (error: unknown) => error instanceof GatewayError && error.code === 'TG_ERR_TASK_NOT_FOUND');
  });

  it('2026: acknowledges whatever the task\'s state, cancelling only one that runs', async () => {
    for (const status of ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const) {
      const record = await created({ era: 'modern', status });
      const req = request();
      const answer = await answerCancel(ctx, deps as TaskDeps, req, { kind: 'request', id: 'c', method: 'tasks/cancel' }, record);
      assert.deepEqual(answer, { status: 200, body: { jsonrpc: '2.0', id: 'c', result: { resultType: 'complete' } } }, status);
      const now = (await store.getTask(record.handle))?.status;
      assert.equal(now, status === 'working' || status === 'input_required' ? 'cancelled' : status, status);
      assert.equal(req.statusSeen, now === status ? undefined : 'cancelled');
    }
  });
});

describe('answerGet', () => {
  it('2026: inlines the result of a completed task, with its own resultType, and keeps the answer as the poll snapshot', async () => {
    const record = await created({ status: 'completed' }, { outcome: { result: { content: [{ type: 'text', text: '42' }] } } });
    const req = request();
    const answer = await answerGet(deps as TaskDeps, req, { kind: 'request', id: 5, method: 'tasks/get' }, record);
    const body = JSON.parse(answer.body as string);
    assert.equal(body.id, 5);
    assert.equal(body.result.status, 'completed');
    assert.equal(body.result.resultType, 'complete');
    assert.deepEqual(body.result.result, { content: [{ type: 'text', text: '42' }], resultType: 'complete' });
    assert.equal(req.statusSeen, 'completed');
    const snapshot = await store.readPollSnapshot(record.handle);
    assert.equal(snapshot?.snapshot, JSON.stringify(body.result), 'an early poll gets these very bytes');
  });

  it('2026: shows the questions of a task waiting for input, and the error of a failed one', async () => {
    const inputRequests = { '1.name': { method: 'elicitation/create' } };
    const waiting = await created({ status: 'input_required' }, { inputRequests, requestState: 'never shown' });
    const text = (await answerGet(deps as TaskDeps, request(), { kind: 'request', id: 1, method: 'tasks/get' }, waiting)).body as string;
    assert.deepEqual(JSON.parse(text).result.inputRequests, inputRequests);
    assert.equal(text.includes('never shown'), false, 'the requestState stays with the gateway');
    const failed = await created({ status: 'failed' }, { outcome: { error: { code: -32000, message: 'boom' } } });
    const error = JSON.parse((await answerGet(deps as TaskDeps, request(), { kind: 'request', id: 1, method: 'tasks/get' }, failed)).body as string).result.error;
    assert.deepEqual(error, { code: -32000, message: 'boom' });
  });

  it('2026: answers a working task from the record the poll opened, and a read-once result only once', async () => {
    const working = await created({ status: 'working' });
    await store.deleteTask(working.handle); // no second read: the record in hand is the answer
    const body = JSON.parse((await answerGet(deps as TaskDeps, request(), { kind: 'request', id: 1, method: 'tasks/get' }, working)).body as string);
    assert.equal(body.result.status, 'working');
    const once = await created({ status: 'completed', readOnce: true }, { outcome: { result: { content: [] } } });
    await answerGet(deps as TaskDeps, request(), { kind: 'request', id: 1, method: 'tasks/get' }, once);
    assert.equal(await store.getTask(once.handle), undefined, 'delivered, so forgotten');
  });

  it('2025: the task as its record has it, nothing of the outcome inline', async () => {
    const record = await created({ era: 'legacy', status: 'completed' }, { outcome: { result: { content: [{ type: 'text', text: 'secret' }] } } });
    const text = (await answerGet(deps as TaskDeps, request(), { kind: 'request', id: 1, method: 'tasks/get' }, record)).body as string;
    assert.equal(JSON.parse(text).result.status, 'completed');
    assert.equal(text.includes('secret'), false, '2025 delivers the result by tasks/result');
    assert.equal(JSON.parse(text).result.resultType, undefined);
  });

  it('says not found for a task that went between its poll and its read', async () => {
    const record = await created({ status: 'completed' }, { outcome: { result: {} } });
    await store.deleteTask(record.handle);
    await assert.rejects(answerGet(deps as TaskDeps, request(), { kind: 'request', id: 1, method: 'tasks/get' }, record), (error: unknown) => error instanceof GatewayError && error.code === 'TG_ERR_TASK_NOT_FOUND');
  });
});
