import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { tasksSchema } from '../../../src/config/sections/tasks.js';
import { auditSchema } from '../../../src/config/sections/audit.js';
import { createAuditLog } from '../../../src/observability/audit.js';
import { createHandleHasher } from '../../../src/observability/handle-hash.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import { TaskObserver } from '../../../src/observability/task-observer.js';
import type { McpMessage } from '../../../src/mcp/jsonrpc.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { NO_EXTENSIONS } from '../../../src/tasks/extension-points.js';
import type { TaskDeps } from '../../../src/tasks/task-context.js';
import { createTaskResponseHook } from '../../../src/tasks/task-responses.js';
import type { TaskPatch, TaskRecord } from '../../../src/task-model/task-record.js';
import { scopeOf, taskRecord } from '../../support/task-records.js';
import { taskRequest, testBackendRoute } from '../../support/task-request.js';

function depsWith(store: MemoryStore): TaskDeps {
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics({ defaultMetrics: false });
  const audit = auditSchema.parse({});
  const observer = new TaskObserver(metrics, createAuditLog({ ...audit, stdout: false }, { buffered: false, flushInterval: 250 }, () => undefined), createHandleHasher('test-salt-0123456789'), logger, audit);
  return {
    store,
    policy: tasksSchema.parse({}),
    authEnabled: true,
    logger,
    resultWaits: new Map(),
    observer,
    callUpstream: async () => ({ status: 200 }),
    listenUpstream: () => Promise.reject(new Error('no backend listens in this test')),
    credentialsPerCaller: () => false,
    extensions: NO_EXTENSIONS,
  };
}

/**
 * A memory store holding `record`, and the response hook of a request to its instance whose
 * body was `sent`; `extra` is laid over the request context (the task it named, say).
 */
async function hookFor(record: TaskRecord, sent: unknown, extra: Record<string, unknown> = {}) {
  const store = new MemoryStore({ maxSessions: 10, maxTasks: 10 });
  await store.createTask(record, 10);
  const request = taskRequest({
    route: testBackendRoute({ upstream: { instances: [record.instance] } }),
    instance: { url: record.instance, coolingUntil: 0 },
    era: 'legacy',
    message: sent as McpMessage,
    ...extra,
  });
  return { store, hook: createTaskResponseHook(depsWith(store), request) };
}

describe('task response rewriting', () => {
  it('replaces the backend task id with the handle in an error\'s message and data', async () => {
    const record = taskRecord({ upstreamTaskId: 'backend-7f3a' });
    const { store, hook } = await hookFor(record, { kind: 'request', id: 4, method: 'tasks/cancel', params: {} }, { task: record });
    const rewritten = await hook({
      kind: 'response',
      id: 4,
      error: { code: -32602, message: 'Task "backend-7f3a" not found', data: { taskId: 'backend-7f3a', nested: ['backend-7f3a'] } },
    });
    assert.ok(rewritten && rewritten.kind === 'response');
    assert.equal(rewritten.error?.message, `Task "${record.handle}" not found`);
    assert.deepEqual(rewritten.error?.data, { taskId: record.handle, nested: [record.handle] });
    await store.close();
  });

  describe('messages with no task in them are left as they came (relayed as their bytes)', () => {
    const RELATED = 'io.modelcontextprotocol/related-task';
    const setup = async () => {
      const record = taskRecord({ upstreamTaskId: 'backend-9c1d' });
      return { record, ...(await hookFor(record, { kind: 'request', id: 3, method: 'tools/call', params: {} })) };
    };

    it('a plain tools/call result, an error without a task, a progress notification', async () => {
      const { store, hook } = await setup();
      assert.equal(await hook({ kind: 'response', id: 3, result: { content: [{ type: 'text', text: 'hi' }] } }), undefined);
      assert.equal(await hook({ kind: 'response', id: 3, result: 'not an object' }), undefined);
      assert.equal(await hook({ kind: 'response', id: 3, error: { code: -32603, message: 'boom' } }), undefined);
      assert.equal(await hook({ kind: 'notification', method: 'notifications/progress', params: { progressToken: 1, progress: 0.5 } }), undefined);
      assert.equal(await hook({ kind: 'notification', method: 'notifications/message', params: { _meta: { other: true }, level: 'info', data: 'x' } }), undefined);
      await store.close();
    });

    it('but a related task is rewritten to its handle, and one the gateway does not hold (or not a string id) is removed', async () => {
      const { store, record, hook } = await setup();
      const known = await hook({ kind: 'notification', method: 'notifications/message', params: { _meta: { [RELATED]: { taskId: 'backend-9c1d' } }, level: 'info', data: 'x' } });
      assert.ok(known && known.kind === 'notification');
      assert.deepEqual((known.params as { _meta: unknown })._meta, { [RELATED]: { taskId: record.handle } });
      for (const taskId of ['backend-unknown', 42]) {
        const dropped = await hook({ kind: 'response', id: 3, result: { content: [], _meta: { [RELATED]: { taskId }, kept: 1 } } });
        assert.ok(dropped && dropped.kind === 'response', String(taskId));
        assert.deepEqual((dropped.result as { _meta: unknown })._meta, { kept: 1 }, `a backend id (${String(taskId)}) must not reach the client`);
      }
      await store.close();
    });
  });

  describe('a numbered backend\'s id, hidden wherever it writes about its task (backend-ids.ts)', () => {
    const record = taskRecord({ upstreamTaskId: '2' });
    const h = record.handle;
    const modern = (method: string) => ({ mcp: { era: 'modern', batch: false, body: Buffer.alloc(0), messages: [], message: { kind: 'request', id: 5, method, params: {} } }, task: record });

    it('a 2026 update or cancel ack: the id hidden, and resultType the standard one whatever the backend said', async () => {
      for (const method of ['tasks/update', 'tasks/cancel']) {
        const { store, hook } = await hookFor(record, undefined, modern(method));
        const rewritten = await hook({ kind: 'response', id: 5, result: { resultType: 'task', _meta: { 'example.com/note': 'job 2 cancel requested' } } });
        assert.ok(rewritten && rewritten.kind === 'response');
        assert.deepEqual(rewritten.result, { resultType: 'complete', _meta: { 'example.com/note': `job ${h} cancel requested` } }, method);
        await store.close();
      }
    });

    it('a 2025 tasks/result: the tool\'s result as it came, its _meta rewritten', async () => {
      const { store, hook } = await hookFor(record, { kind: 'request', id: 6, method: 'tasks/result', params: {} }, { task: record });
      const rewritten = await hook({ kind: 'response', id: 6, result: { content: [{ type: 'text', text: '2 + 2 = 4' }], _meta: { 'example.com/job': 'job 2' } } });
      assert.ok(rewritten && rewritten.kind === 'response');
      assert.deepEqual(rewritten.result, { content: [{ type: 'text', text: '2 + 2 = 4' }], _meta: { 'example.com/job': `job ${h}` } });
      assert.equal(await hook({ kind: 'response', id: 6, result: { content: [{ type: 'text', text: 'job 2' }] } }), undefined, 'nothing of the gateway\'s to rewrite: relayed as its bytes');
      await store.close();
    });

    it('progress and log lines about the task; a server request\'s question left as asked', async () => {
      const { store, hook } = await hookFor(record, { kind: 'request', id: 6, method: 'tasks/result', params: {} }, { task: record });
      const progress = await hook({ kind: 'notification', method: 'notifications/progress', params: { progressToken: '2', progress: 1, message: 'job 2: step 1' } });
      assert.deepEqual(progress && progress.kind === 'notification' && progress.params, { progressToken: '2', progress: 1, message: `job ${h}: step 1` });
      const log = await hook({ kind: 'notification', method: 'notifications/message', params: { level: 'info', data: { line: 'job 2 started' } } });
      assert.deepEqual(log && log.kind === 'notification' && log.params, { level: 'info', data: { line: `job ${h} started` } });
      const asked = await hook({ kind: 'request', id: 0, method: 'elicitation/create', params: { message: 'Stop job 2?', _meta: { job: '2' } } });
      assert.deepEqual(asked && asked.kind === 'request' && asked.params, { message: 'Stop job 2?', _meta: { job: h } });
      await store.close();
    });
  });

  it('a status notification the poll snapshot does not have sends the next poll to the backend', async () => {
    const record = taskRecord({ upstreamTaskId: 'backend-5e2b', pollIntervalMs: 60_000 });
    const { store, hook } = await hookFor(record, undefined);
    const limits = { toleranceMs: 0, abuseFactor: 100 };
    const poll = async () => {
      const opened = await store.openPoll(record.handle, scopeOf(record), Date.now(), limits);
      assert.equal(opened.outcome, 'polled');
      return opened.decision;
    };
    const notify = (status: string, statusMessage?: string) =>
      hook({
        kind: 'notification',
        method: 'notifications/tasks/status',
        params: { taskId: 'backend-5e2b', status, statusMessage, createdAt: record.createdAtIso, lastUpdatedAt: record.lastUpdatedAtIso, ttl: record.ttlMs, pollInterval: 60_000 },
      });

    assert.equal((await poll()).verdict, 'forward');
    await store.recordPoll(record, {}, '{"status":"working"}');
    assert.deepEqual([(await poll()).verdict, (await poll()).snapshot], ['early', '{"status":"working"}']);
    await notify('working', 'half way');
    assert.equal((await poll()).verdict, 'early', 'a new message alone leaves the cache and the poll clock as they are');
    await notify('completed');
    assert.equal((await poll()).verdict, 'forward', 'the snapshot still says working: the next poll must reach the backend');
    assert.equal((await store.getTask(record.handle))?.status, 'completed');
    await store.close();
  });

  describe('the write-back of a forwarded tasks/get', () => {
    /** A memory store whose write-backs wait for the test to let them through (or fail them). */
    class HeldStore extends MemoryStore {
      readonly held: { record: TaskRecord; patch: TaskPatch; release: () => void; fail: (error: Error) => void }[] = [];
      override recordPoll(record: TaskRecord, patch: TaskPatch, snapshot: string): Promise<void> {
        return new Promise<void>((resolve, reject) => {
          this.held.push({
            record,
            patch,
            release: () => void super.recordPoll(record, patch, snapshot).then(resolve, reject),
            fail: reject,
          });
        });
      }
    }

    const lines: string[] = [];
    const log = pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) }));
    const polled = (record: TaskRecord) =>
      taskRequest({
        log,
        route: testBackendRoute({ upstream: { instances: [record.instance] } }),
        task: record,
        era: 'legacy',
        message: { kind: 'request', id: 7, method: 'tasks/get', params: {} },
      });
    const answer = (record: TaskRecord, status: string) =>
      ({ kind: 'response', id: 7, result: { taskId: record.upstreamTaskId, status, ttl: record.ttlMs, pollInterval: record.pollIntervalMs } }) as const;
    /** Whether `promise` settles before the macrotask queue has run once. */
    const settlesAtOnce = async (promise: Promise<unknown>) => {
      let settled = false;
      void promise.then(() => (settled = true), () => (settled = true));
      await new Promise((resolve) => setImmediate(resolve));
      return settled;
    };

    it('answers a running task\'s poll without waiting, and logs a failed write-back without the handle', async () => {
      const store = new HeldStore({ maxSessions: 10, maxTasks: 10 });
      const record = taskRecord();
      await store.createTask(record, 10);
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const hook = createTaskResponseHook(depsWith(store), polled(record));
        const rewritten = hook(answer(record, 'working'));
        assert.equal(await settlesAtOnce(rewritten), true, 'the reply does not wait for the write-back');
        assert.equal(store.held.length, 1, 'the write-back was issued before the reply');
        assert.equal(store.held[0]!.patch.status, 'working');
        lines.length = 0;
        store.held[0]!.fail(new Error('store unavailable'));
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(lines.length, 1);
        assert.match(lines[0]!, /could not record a forwarded poll/);
        assert.ok(!lines[0]!.includes(record.handle), 'no handle in the general log');
        assert.deepEqual(unhandled, []);
      } finally {
        process.off('unhandledRejection', onUnhandled);
        await store.close();
      }
    });

    it('waits for the write-back of a poll that ends the task, so its owner\'s slot is free before the answer', async () => {
      const store = new HeldStore({ maxSessions: 10, maxTasks: 10 });
      const record = taskRecord();
      await store.createTask(record, 1);
      const hook = createTaskResponseHook(depsWith(store), polled(record));
      const rewritten = hook(answer(record, 'completed'));
      assert.equal(await settlesAtOnce(rewritten), false);
      store.held[0]!.release();
      await rewritten;
      assert.equal((await store.getTask(record.handle))?.status, 'completed');
      assert.equal(await store.createTask(taskRecord(), 1), 'created');
      await store.close();
    });
  });
});
