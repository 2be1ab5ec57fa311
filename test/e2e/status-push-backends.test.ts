/**
 * Status push for backend-owned tasks on three instances of one upstream: two that push task
 * status themselves (the gateway listens to each once, with the backend ids, and polls them no
 * more), one that does not (the gateway polls it for the listener). The listener gets every
 * change under the right handle, and nothing of another principal's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import type { ModernTaskClient } from './support/modern-client.js';
import type { RecordedRequest } from '../../examples/modern-task-server/server.js';
import { listen, taskIn } from './support/push-listener.js';

const TASKS = 6;

describe('status push: backend tasks on instances that push and one that does not', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  let bob: ModernTaskClient;
  before(async () => {
    stack = await startTaskStack({ era: 'modern', count: 3, pushTasks: [true, false, true], pollIntervalMs: 100 });
    alice = await modernClient(stack, 'alice');
    bob = await modernClient(stack, 'bob');
  });
  after(async () => {
    await alice?.close();
    await bob?.close();
    await stack?.close();
  });

  it('pushes every task\'s completion under its handle, listening to pushing instances once and polling the other', async () => {
    const start = async (client: ModernTaskClient, seconds: number) =>
      String((await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds } })).response?.result?.taskId);
    const mine: string[] = [];
    for (let i = 0; i < TASKS; i++) mine.push(await start(alice, 1.5));
    const theirs = await start(bob, 0.5);
    const calls = (b: number) => stack.backends[b]!.stats.requests.filter((r) => r.rpcMethod === 'tools/call').length;
    const created = [0, 1, 2].map(calls);
    assert.ok(created.every((n) => n >= 1), `the tasks were spread over the three instances (${created.join(', ')})`);
    for (const b of [0, 1, 2]) stack.backends[b]!.stats.reset();

    const listener = await listen(stack.gw.url, await stack.bearer('alice'), { taskIds: [...mine, theirs] });
    try {
      const ack = await listener.waitFor(() => true);
      assert.deepEqual(new Set((ack.params?.notifications as { taskIds: string[] }).taskIds), new Set(mine));
      for (const taskId of mine) {
        const done = await listener.waitFor(taskIn(taskId, 'completed'), 10_000, `the completion of ${taskId}`);
        assert.match(JSON.stringify(done.params!.result), /Scan finished/);
      }
      await listener.waitFor((m) => 'result' in m, 4000, 'the listen response');
      assert.equal(listener.tasks(theirs).length, 0, 'nothing of bob\'s');

      const listens = (b: number) => stack.backends[b]!.stats.requests.filter((r: RecordedRequest) => r.rpcMethod === 'subscriptions/listen');
      const polls = (b: number) => stack.backends[b]!.stats.requests.filter((r: RecordedRequest) => r.rpcMethod === 'tasks/get').length;
      for (const b of [0, 2]) {
        assert.ok(listens(b).length >= 1, `pushing instance ${b} was listened to`);
        const named = listens(b).flatMap((r) => (r.body as { params: { notifications: { taskIds: string[] } } }).params.notifications.taskIds);
        for (const handle of [...mine, theirs]) assert.ok(!named.includes(handle), 'backend ids, never handles, upstream');
        assert.ok(polls(b) <= 2 * created[b]! + 2, `pushing instance ${b} was barely polled (${polls(b)})`);
      }
      assert.ok(polls(1) >= 3, `the instance that does not push was polled by the gateway (${polls(1)})`);
    } finally {
      listener.close();
    }
  });
});
