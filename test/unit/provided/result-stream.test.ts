/**
 * 2025 tasks/result of a task the gateway runs itself (src/provided/result-stream.ts), from the
 * real memory store: the answer the tools/call would have had, at once for a task that ended,
 * else on an event stream that carries the backend's questions (each once) until the end. The
 * request stands for what the answer reads of it: its context (statusSeen, abort) and its log.
 */
import type { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createParser } from 'eventsource-parser';
import pino from 'pino';
import { tasksSchema } from '../../../src/config/sections/tasks.js';
import { GatewayError } from '../../../src/errors.js';
import type { JsonRpcRequest } from '../../../src/mcp/jsonrpc.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import { answerLegacyResult } from '../../../src/provided/result-stream.js';
import { RELATED_TASK } from '../../../src/provided/task-driver.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { ProvidedState } from '../../../src/task-model/provided-state.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import type { TaskDeps } from '../../../src/tasks/task-context.js';
import { quietTaskObserver } from '../../support/task-observer.js';
import { taskRequest } from '../../support/task-request.js';
import { waitFor } from '../../support/wait.js';
import { providedRecord, providedState } from '../../support/task-records.js';

const MESSAGE: JsonRpcRequest = { kind: 'request', id: 11, method: 'tasks/result' };

let store: MemoryStore;
let deps: TaskDeps;
beforeEach(() => {
  store = new MemoryStore({ maxSessions: 10, maxTasks: 10 });
  const logger = pino({ level: 'silent' });
  // answerLegacyResult reads the store and the observer of the stage's dependencies, nothing else.
  deps = { store, policy: tasksSchema.parse({}), authEnabled: true, logger, observer: quietTaskObserver(createMetrics({ defaultMetrics: false }), logger) } as unknown as TaskDeps;
});
afterEach(() => store.close());

function request() {
  const tg = taskRequest();
  return { tg, request: tg };
}

async function created(record: Partial<TaskRecord>, state: Partial<ProvidedState> = {}): Promise<TaskRecord> {
  const made = providedRecord({ era: 'legacy', ...record });
  assert.equal(await store.createProvidedTask(made, providedState(state), 10), 'created');
  return made;
}

/** The JSON messages of an event stream, as they come. */
function messagesOf(stream: Readable): { messages: unknown[]; ended: () => boolean } {
  const messages: unknown[] = [];
  let ended = false;
  const parser = createParser({ onEvent: (event) => messages.push(JSON.parse(event.data)) });
  stream.on('data', (chunk: Buffer) => parser.feed(chunk.toString('utf8')));
  stream.on('end', () => (ended = true));
  return { messages, ended: () => ended };
}

/** Moves the task as its driver would on another replica, and announces it. */
async function move(handle: string, patch: Partial<TaskRecord>, state: (now: ProvidedState) => ProvidedState): Promise<void> {
  const view = await store.readProvidedTask(handle);
  assert.ok(await store.writeProvidedTask(handle, view!.rev, patch, state(view!.state)));
  await store.events.publish(handle);
}

describe('answerLegacyResult: a task that ended', () => {
  it('answers what the tools/call would have: the result, with the task in its related-task _meta', async () => {
    const record = await created({ status: 'completed' }, { outcome: { result: { content: [{ type: 'text', text: '42' }], _meta: { backend: 'kept' } } } });
    const { tg, request: req } = request();
    const answer = await answerLegacyResult(deps, req, MESSAGE, record.handle);
    assert.deepEqual(answer, { status: 200, body: { jsonrpc: '2.0', id: 11, result: { content: [{ type: 'text', text: '42' }], _meta: { backend: 'kept', [RELATED_TASK]: { taskId: record.handle } } } } });
    assert.equal(tg.statusSeen, 'completed');
  });

  it('answers the backend\'s JSON-RPC error as it was', async () => {
    const record = await created({ status: 'failed' }, { outcome: { error: { code: -32000, message: 'boom', data: { why: 'disk' } } } });
    const answer = await answerLegacyResult(deps, request().request, MESSAGE, record.handle);
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: 11, error: { code: -32000, message: 'boom', data: { why: 'disk' } } });
  });

  it('answers a cancelled task, which has no result, as the SDK\'s own store does', async () => {
    const record = await created({ status: 'cancelled' });
    const body = (await answerLegacyResult(deps, request().request, MESSAGE, record.handle)).body as { error: { code: number; message: string } };
    assert.equal(body.error.code, -32603);
    assert.equal(body.error.message, 'Task was cancelled: it has no result');
  });

  it('forgets a read-once task once its result is delivered', async () => {
    const record = await created({ status: 'completed', readOnce: true }, { outcome: { result: { content: [] } } });
    await answerLegacyResult(deps, request().request, MESSAGE, record.handle);
    assert.equal(await store.getTask(record.handle), undefined);
  });

  it('says not found for a task that is gone', async () => {
    await assert.rejects(answerLegacyResult(deps, request().request, MESSAGE, providedRecord().handle), (error: unknown) => error instanceof GatewayError && error.code === 'TG_ERR_TASK_NOT_FOUND');
  });
});

describe('answerLegacyResult: a task still running', () => {
  it('streams each of the backend\'s questions once, then the answer, and ends', async () => {
    const question = (n: number) => ({ jsonrpc: '2.0', id: `tg-q${n}`, method: 'elicitation/create', params: { message: `q${n}` } });
    const record = await created({ status: 'working' });
    const { tg, request: req } = request();
    const answer = await answerLegacyResult(deps, req, MESSAGE, record.handle);
    assert.equal(answer.contentType, 'text/event-stream');
    assert.deepEqual(answer.headers, { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
    const stream = messagesOf(answer.body as Readable);
    await move(record.handle, { status: 'input_required' }, (s) => ({ ...s, pendingRequests: [question(1)] }));
    await waitFor(() => stream.messages.length === 1, 'the first question');
    await move(record.handle, {}, (s) => ({ ...s, pendingRequests: [question(1), question(2)] }));
    await waitFor(() => stream.messages.length === 2, 'the second question');
    await move(record.handle, { status: 'completed' }, (s) => ({ ...s, pendingRequests: undefined, outcome: { result: { content: [{ type: 'text', text: 'done' }] } } }));
    await waitFor(stream.ended, 'the end of the stream');
    assert.deepEqual(stream.messages, [
      question(1),
      question(2),
      { jsonrpc: '2.0', id: 11, result: { content: [{ type: 'text', text: 'done' }], _meta: { [RELATED_TASK]: { taskId: record.handle } } } },
    ]);
    assert.equal(tg.statusSeen, 'completed');
  });

  it('ends the stream with not found when the task expires or is delivered elsewhere meanwhile', async () => {
    const record = await created({ status: 'working' });
    const stream = messagesOf((await answerLegacyResult(deps, request().request, MESSAGE, record.handle)).body as Readable);
    await store.deleteTask(record.handle);
    await store.events.publish(record.handle);
    await waitFor(stream.ended, 'the end of the stream');
    assert.deepEqual(stream.messages, [{ jsonrpc: '2.0', id: 11, error: { code: -32602, message: 'Failed to retrieve task: Task not found' } }]);
  });

  it('stops following the task when its client goes away', async () => {
    const record = await created({ status: 'working' });
    const { tg, request: req } = request();
    const stream = messagesOf((await answerLegacyResult(deps, req, MESSAGE, record.handle)).body as Readable);
    tg.abort.abort();
    await waitFor(stream.ended, 'the end of the stream');
    await move(record.handle, { status: 'completed' }, (s) => ({ ...s, outcome: { result: { content: [] } } }));
    assert.deepEqual(stream.messages, [], 'nothing written after the client left');
  });
});
