/**
 * Task objects the gateway writes for tasks it runs itself (provided tasks, docs/provided-tasks.md)
 * validate against the official schema of their era and the clients' own result schemas, as
 * those of backend tasks do (task-objects.test.ts): creation results, polls of a working and an
 * ended task, a cancel, and the 2025 list.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateTaskResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { legacyClient, modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { assertTaskObject } from './support/task-schemas.js';

describe('task objects of provided tasks, 2025-11-25', () => {
  let stack: TaskStack;
  let alice: Client;
  const received: JSONRPCMessage[] = [];
  before(async () => {
    stack = await startTaskStack({ era: 'legacy', plain: true, providedTasks: { tools: ['slow_report', 'report_error'] }, tasks: { poll: { default: '100ms' } } });
    alice = await legacyClient(stack, 'alice');
    const transport = alice.transport as { onmessage?: (message: JSONRPCMessage) => void };
    const deliver = transport.onmessage!;
    transport.onmessage = (message: JSONRPCMessage) => {
      received.push(message);
      deliver(message);
    };
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });
  const lastResult = (): unknown => ([...received].reverse().find((m) => 'result' in m) as { result: unknown }).result;

  it('creation, working and ended polls, a cancel and the list', async () => {
    const create = async (name: string, args: Record<string, unknown>) => {
      const { task } = await alice.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      assertTaskObject('legacy', 'creation', lastResult(), `creation of ${name}`);
      return task.taskId;
    };
    const quick = await create('slow_report', { seconds: 0.3, steps: 2 });
    const failing = await create('report_error', {});
    const doomed = await create('slow_report', { seconds: 30, steps: 3 });
    const statuses = new Set<string>();
    for (const taskId of [quick, failing, doomed]) {
      for (let i = 0; i < 50; i++) {
        const polled = await alice.experimental.tasks.getTask(taskId);
        assertTaskObject('legacy', 'get', lastResult());
        if (polled.status !== 'working' || taskId === doomed) {
          statuses.add(polled.status);
          break;
        }
        await sleep(150);
      }
    }
    assert.deepEqual(statuses, new Set(['completed', 'failed', 'working']));
    await alice.experimental.tasks.cancelTask(doomed);
    assertTaskObject('legacy', 'cancel', lastResult());
    await alice.experimental.tasks.listTasks();
    assertTaskObject('legacy', 'list', lastResult());
  });
});

describe('task objects of provided tasks, 2026-07-28', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  before(async () => {
    stack = await startTaskStack({ era: 'modern', plain: true, providedTasks: { tools: 'all', promoteAfter: '200ms' }, tasks: { poll: { default: '100ms' } }, workMs: 600 });
    alice = await modernClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('creation, working and ended polls, and a cancel ack', async () => {
    const create = async (name: string, args: Record<string, unknown>) => {
      const result = (await alice.raw('tools/call', { name, arguments: args })).response?.result;
      assert.equal(result?.resultType, 'task', `${name} became no task`);
      assertTaskObject('modern', 'creation', result, `creation of ${name}`);
      return String(result!.taskId);
    };
    const quick = await create('slow_scan', { seconds: 1 });
    const failing = await create('fail_task', {});
    const doomed = await create('slow_scan', { seconds: 30 });
    const statuses = new Set<unknown>();
    for (const taskId of [quick, failing, doomed]) {
      for (let i = 0; i < 50; i++) {
        const polled = (await alice.raw('tasks/get', { taskId })).response?.result;
        assertTaskObject('modern', 'get', polled);
        if (polled?.status !== 'working' || taskId === doomed) {
          statuses.add(polled?.status);
          break;
        }
        await sleep(150);
      }
    }
    assert.deepEqual(statuses, new Set(['completed', 'failed', 'working']));
    assertTaskObject('modern', 'cancel', (await alice.raw('tasks/cancel', { taskId: doomed })).response?.result);
  });
});
