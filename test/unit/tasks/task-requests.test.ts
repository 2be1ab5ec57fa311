/**
 * The tasks stage on the way in (src/tasks/task-requests.ts) asks the request's wire, not its
 * era's name: which tasks/* methods exist, who declares what, who starts a task and with what
 * lifetime, and what an early poll gets from the record alone. Each era's rule, driven through
 * planTaskRequest with plain requests and a memory store.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { tasksSchema } from '../../../src/config/sections/tasks.js';
import { GatewayError } from '../../../src/errors.js';
import type { Era } from '../../../src/mcp/era.js';
import type { JsonRpcRequest } from '../../../src/mcp/jsonrpc.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { NO_EXTENSIONS } from '../../../src/tasks/extension-points.js';
import type { TaskDeps } from '../../../src/tasks/task-context.js';
import { planTaskRequest } from '../../../src/tasks/task-requests.js';
import { taskRecord } from '../../support/task-records.js';
import { quietTaskObserver } from '../../support/task-observer.js';
import { taskRequest } from '../../support/task-request.js';

const DECLARED = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };

let store: MemoryStore;
let deps: TaskDeps;

beforeEach(() => {
  store = new MemoryStore({ maxSessions: 10, maxTasks: 10 });
  const logger = pino({ level: 'silent' });
  deps = {
    store,
    policy: tasksSchema.parse({ ttl: { max: '1m' }, poll: { floor: '10s', default: '10s' } }),
    authEnabled: true,
    logger,
    observer: quietTaskObserver(createMetrics({ defaultMetrics: false }), logger),
    resultWaits: new Map(),
    callUpstream: async () => ({ status: 200 }),
    listenUpstream: () => Promise.reject(new Error('no backend listens in this test')),
    credentialsPerCaller: () => false,
    extensions: NO_EXTENSIONS,
  };
});
afterEach(() => store.close());

function call(method: string, params: Record<string, unknown> = {}): JsonRpcRequest {
  return { kind: 'request', id: 7, method, params };
}

async function plan(era: Era, message: JsonRpcRequest) {
  const request = taskRequest({ era, message, principalKey: 'owner-a' });
  return { request, answer: await planTaskRequest(deps, request) };
}

async function refusal(era: Era, message: JsonRpcRequest): Promise<GatewayError> {
  const error = await plan(era, message).then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof GatewayError, `${era} ${message.method}: refused`);
  return error;
}

describe('tasks/* by era', () => {
  it('refuses what the modern era lacks with -32601, and leaves legacy tasks/update to the backend', async () => {
    assert.equal((await refusal('modern', call('tasks/result', { taskId: 'x', _meta: DECLARED }))).rpcCode, -32601);
    assert.equal((await refusal('modern', call('tasks/list', { _meta: DECLARED }))).rpcCode, -32601);
    const { request, answer } = await plan('legacy', call('tasks/update', { taskId: 'x' }));
    assert.equal(answer, undefined, 'forwarded: the backend answers a method it does not know');
    assert.equal(request.task, undefined);
  });

  it('asks each modern task request to declare the extension; a legacy session declared it once', async () => {
    assert.equal((await refusal('modern', call('tasks/get', { taskId: 'x' }))).rpcCode, -32021);
    assert.equal((await refusal('modern', call('tasks/get', { taskId: 'x', _meta: DECLARED }))).rpcCode, -32602, 'declared: on to the lookup');
    assert.equal((await refusal('legacy', call('tasks/get', { taskId: 'x' }))).rpcCode, -32602);
  });

  it('lists the owner\'s legacy tasks only', async () => {
    await store.createTask(taskRecord({ owner: 'owner-a', era: 'legacy' }), 10);
    await store.createTask(taskRecord({ owner: 'owner-a', era: 'modern' }), 10);
    const { answer } = await plan('legacy', call('tasks/list'));
    const result = (answer?.body as { result: { tasks: Record<string, unknown>[] } }).result;
    assert.equal(result.tasks.length, 1);
    assert.ok('ttl' in result.tasks[0]! && !('ttlMs' in result.tasks[0]!), 'a legacy task object');
  });
});

describe('tools/call by era: who starts a task', () => {
  it('legacy: the client asks, and its lifetime is held to the policy before the backend sees it', async () => {
    const { request, answer } = await plan('legacy', call('tools/call', { name: 'scan', task: { ttl: 3_600_000.5 } }));
    assert.equal(answer, undefined);
    assert.deepEqual(JSON.parse(request.mcp!.body.toString()).params.task, { ttl: 60_000 });
    assert.equal(request.declaresTasks, undefined);
  });

  it('modern: the server decides; the stage only notes whether the request declared the extension', async () => {
    const declared = await plan('modern', call('tools/call', { name: 'scan', _meta: DECLARED }));
    assert.equal(declared.request.declaresTasks, true);
    assert.equal(declared.request.mcp!.body.length, 0, 'the body goes as it came');
    const plain = await plan('modern', call('tools/call', { name: 'scan', task: { ttl: 1000 } }));
    assert.equal(plain.request.declaresTasks, false, 'params.task is no declaration in the modern era');
  });
});

describe('an early poll answered from the record alone', () => {
  async function earlyPoll(overrides: Partial<TaskRecord>) {
    // On the test route's one instance, where a forwarded poll goes.
    const record = taskRecord({ owner: 'owner-a', instance: 'http://127.0.0.1:9', ...overrides });
    await store.createTask(record, 10);
    // Fresh params for each: a forwarded poll's are rewritten (the backend's id for the handle).
    const poll = () => call('tasks/get', { taskId: record.handle, _meta: DECLARED });
    const first = await plan(record.era, poll());
    assert.equal(first.answer, undefined, 'the first poll goes to the backend');
    return plan(record.era, poll());
  }

  it('legacy: the task object the record makes, whatever its status', async () => {
    const { answer, request } = await earlyPoll({ era: 'legacy', status: 'completed' });
    const result = (answer?.body as { result: Record<string, unknown> }).result;
    assert.equal(result.status, 'completed');
    assert.equal('resultType' in result, false);
    assert.equal(request.pollOutcome, 'cached');
  });

  it('modern: a running task with its resultType; one that ended is asked of the backend after all', async () => {
    const running = await earlyPoll({ era: 'modern' });
    assert.equal((running.answer?.body as { result: Record<string, unknown> }).result.resultType, 'complete');
    const ended = await earlyPoll({ era: 'modern', status: 'completed' });
    assert.equal(ended.answer, undefined, 'the record holds no inline result');
    assert.equal(ended.request.pollOutcome, 'forwarded');
  });
});
