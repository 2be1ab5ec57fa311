import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyRequest } from 'fastify';
import pino from 'pino';
import { tasksSchema } from '../../../src/config/sections/tasks.js';
import { auditSchema } from '../../../src/config/sections/audit.js';
import { createAuditLog } from '../../../src/observability/audit.js';
import { createHandleHasher } from '../../../src/observability/handle-hash.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import { TaskObserver } from '../../../src/observability/task-observer.js';
import { InstancePool } from '../../../src/routing/balancer.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import type { TaskDeps } from '../../../src/tasks/task-context.js';
import { createTaskResponseHook } from '../../../src/tasks/task-responses.js';
import { taskRecord } from '../store/store-contract.js';

function depsWith(store: MemoryStore): TaskDeps {
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics({ defaultMetrics: false });
  const audit = auditSchema.parse({});
  return {
    store,
    policy: tasksSchema.parse({}),
    authEnabled: true,
    logger,
    resultWaits: new Map(),
    observer: new TaskObserver(metrics, createAuditLog({ ...audit, stdout: false }), createHandleHasher('test-salt-0123456789'), logger, audit),
    callUpstream: async () => 200,
  };
}

describe('task response rewriting', () => {
  it('replaces the backend task id with the handle in an error\'s message and data', async () => {
    const store = new MemoryStore({ maxSessions: 10, maxTasks: 10 });
    const record = taskRecord({ upstreamTaskId: 'backend-7f3a' });
    await store.createTask(record, 10);
    const request = {
      tg: {
        route: { path: '/mcp', upstreamPath: '/mcp', pool: new InstancePool('tools', [record.instance], 1000) },
        abort: new AbortController(),
        task: record,
        mcp: { era: 'legacy', batch: false, body: Buffer.alloc(0), messages: [], message: { kind: 'request', id: 4, method: 'tasks/cancel', params: {} } },
      },
    } as unknown as FastifyRequest;
    const hook = createTaskResponseHook(depsWith(store), request);
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
});
