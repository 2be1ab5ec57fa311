/**
 * Task status pushed to a 2026-07-28 client (src/push/): a raw subscriptions/listen naming task
 * handles, through one gateway, for backend-owned tasks (the modern task server, which does not
 * push: the gateway polls for the listener) and for tasks the gateway runs itself; each listener
 * gets its own tasks only, every notification tagged with its listen id.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { listen, taskIn, type Listener } from './support/push-listener.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';

async function startTask(client: ModernTaskClient, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const created = await client.raw('tools/call', { name, arguments: args });
  const taskId = created.response?.result?.taskId;
  assert.equal(typeof taskId, 'string', JSON.stringify(created.response));
  return taskId as string;
}

/** The messages of a listen, with its id (chosen by the test) made one placeholder. */
function shapeOf(listener: Listener): unknown {
  const id = JSON.stringify(listener.messages.at(-1)?.id);
  return JSON.parse(JSON.stringify(listener.messages).split(id).join('"ID"'));
}

describe('status push: backend-owned tasks on one gateway', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  let bob: ModernTaskClient;
  const open: Listener[] = [];
  const listenAs = async (subject: string, notifications: Record<string, unknown>, opts = {}) => {
    const listener = await listen(stack.gw.url, await stack.bearer(subject), notifications, opts);
    open.push(listener);
    return listener;
  };
  before(async () => {
    stack = await startTaskStack({
      era: 'modern',
      pollIntervalMs: 100,
      tasks: { ttl: { max: '2m' }, tools: { fail_task: { maxTtl: '1s' } }, push: { maxTaskIdsPerSubscription: 4, maxSubscriptionsPerPrincipal: 3 } },
    });
    alice = await modernClient(stack, 'alice');
    bob = await modernClient(stack, 'bob');
  });
  after(async () => {
    for (const listener of open) listener.close();
    await alice?.close();
    await bob?.close();
    await stack?.close();
  });

  it('acknowledges the caller\'s own handles, pushes each change with the result inline, then ends', async () => {
    const mine = await startTask(alice, 'slow_scan', { seconds: 0.6 });
    const theirs = await startTask(bob, 'slow_scan', { seconds: 0.3 });
    const listener = await listenAs('alice', { taskIds: [mine, theirs] }, { id: 'listen-1' });
    assert.equal(listener.status, 200);
    assert.match(listener.contentType, /^text\/event-stream/);
    const first = await listener.waitFor(() => true);
    assert.equal(first.method, ACKNOWLEDGED, 'the acknowledgement comes first');
    assert.deepEqual(first.params?.notifications, { taskIds: [mine] });
    await listener.waitFor(taskIn(mine, 'working'));
    const done = await listener.waitFor(taskIn(mine, 'completed'), 8000, 'completion');
    assert.equal((done.params!.result as { resultType?: string }).resultType, 'complete');
    assert.match(JSON.stringify(done.params!.result), /Scan finished/);
    assert.equal(done.params!.resultType, 'complete');
    const end = await listener.waitFor((m) => 'result' in m, 4000, 'the listen response');
    assert.deepEqual(end, { jsonrpc: '2.0', id: 'listen-1', result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 'listen-1' } } });
    await listener.ended;
    for (const m of listener.messages.filter((m) => m.method !== undefined)) {
      assert.equal((m.params?._meta as Record<string, unknown>)[SUBSCRIPTION_ID], 'listen-1', 'every notification is tagged');
    }
    assert.equal(listener.tasks(theirs).length, 0, 'nothing of another principal\'s');
    assert.doesNotMatch(JSON.stringify(listener.messages), new RegExp(theirs));
    // What the listener was last told is what tasks/get answers.
    const polled = (await alice.raw('tasks/get', { taskId: mine })).response?.result;
    assert.deepEqual({ ...done.params, _meta: undefined }, { ...polled, _meta: undefined });
  });

  it('leaves a foreign, unknown, expired or malformed handle out exactly alike', async () => {
    const foreign = await startTask(bob, 'slow_scan', { seconds: 5 });
    const expired = await startTask(alice, 'fail_task');
    await sleep(2300);
    assert.equal((await alice.raw('tasks/get', { taskId: expired })).response?.error?.code, -32602, 'the task has expired');
    const shapes = [];
    for (const id of [foreign, expired, 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 42]) {
      const listener = await listenAs('alice', { taskIds: [id] });
      await listener.ended;
      assert.equal(listener.status, 200);
      shapes.push(shapeOf(listener));
    }
    assert.deepEqual(shapes[0], [
      { jsonrpc: '2.0', method: ACKNOWLEDGED, params: { notifications: { taskIds: [] }, _meta: { [SUBSCRIPTION_ID]: 'ID' } } },
      { jsonrpc: '2.0', id: 'ID', result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 'ID' } } },
    ]);
    for (const shape of shapes.slice(1)) assert.deepEqual(shape, shapes[0]);
  });

  it('refuses a listen naming task handles without the tasks extension: 400 -32021', async () => {
    const listener = await listenAs('alice', { taskIds: [] }, { declare: false });
    assert.equal(listener.status, 400);
    assert.equal((listener.body?.error as { code: number }).code, -32021);
  });

  it('holds the caps: task ids per subscription (400 -31009) and subscriptions per principal (429 -31008)', async () => {
    const many = await listenAs('alice', { taskIds: ['a', 'b', 'c', 'd', 'e'] });
    assert.equal(many.status, 400);
    assert.equal((many.body?.error as { code: number }).code, -31009);
    const running = await startTask(alice, 'slow_scan', { seconds: 30 });
    const held = [];
    for (let i = 0; i < 3; i++) held.push(await listenAs('alice', { taskIds: [running] }));
    const refused = await listenAs('alice', { taskIds: [running] });
    assert.equal(refused.status, 429);
    assert.equal((refused.body?.error as { code: number }).code, -31008);
    assert.equal((await listenAs('bob', { taskIds: [] })).status, 200, 'another principal is not held to alice\'s count');
    held[0]!.close();
    for (let i = 0; i < 50; i++) {
      const again = await listenAs('alice', { taskIds: [running] });
      if (again.status === 200) return;
      await sleep(20);
    }
    assert.fail('a closed listen did not give its slot back');
  });
});

describe('status push: tasks the gateway runs itself', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  before(async () => {
    stack = await startTaskStack({ era: 'modern', plain: true, providedTasks: { tools: 'all', promoteAfter: '200ms' }, tasks: { poll: { default: '100ms' } }, workMs: 800 });
    alice = await modernClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('pushes input_required with its inputRequests, then the completion with the result, as tasks/get answers them', async () => {
    const taskId = await startTask(alice, 'slow_then_ask');
    const listener = await listen(stack.gw.url, await stack.bearer('alice'), { taskIds: [taskId] });
    try {
      const asking = await listener.waitFor(taskIn(taskId, 'input_required'), 8000, 'input_required');
      assert.deepEqual(Object.keys(asking.params!.inputRequests as object), ['1.name']);
      await alice.raw('tasks/update', { taskId, inputResponses: { '1.name': { action: 'accept', content: { name: 'Ada' } } } });
      const done = await listener.waitFor(taskIn(taskId, 'completed'), 8000, 'completion');
      assert.match(JSON.stringify(done.params!.result), /Hello at last, Ada/);
      const polled = (await alice.raw('tasks/get', { taskId })).response?.result;
      assert.deepEqual({ ...done.params, _meta: undefined }, { ...polled, _meta: undefined });
      await listener.waitFor((m) => 'result' in m, 4000, 'the listen response');
      assert.equal(stack.received('tasks/get'), 0, 'the backend saw no tasks/*');
    } finally {
      listener.close();
    }
  });
});
