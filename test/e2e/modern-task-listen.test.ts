// subscriptions/listen with taskIds straight against the 2026-07-28 task server (no gateway): the
// backend that pushes (pushTasks) and the one that, like most, acknowledges without taskIds.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { createModernTaskClient, type HttpExchange, type ModernTaskClient } from './support/modern-client.js';
import { waitFor } from '../support/wait.js';
import { assertTaskObject } from './support/task-schemas.js';
import { waitForModernStatus } from './support/task-waits.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

async function startTask(client: ModernTaskClient, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const execution = await client.callTool(name, args);
  assert.equal(execution.kind, 'task', `${name} did not create a task`);
  await execution.detach();
  return execution.handle.taskId;
}

function notificationsOf(exchange: HttpExchange): Record<string, unknown>[] {
  return exchange.messages.filter((m) => m.method === 'notifications/tasks');
}

/** The tasks/get answer as a notification carries it: without the result's envelope fields. */
async function snapshot(client: ModernTaskClient, taskId: string): Promise<Record<string, unknown>> {
  const { resultType: _resultType, _meta, ...task } = (await client.raw('tasks/get', { taskId })).response?.result ?? {};
  return task;
}

describe('modern task server: subscriptions/listen with taskIds', () => {
  let pushing: ModernTaskServer;
  let polling: ModernTaskServer;
  let client: ModernTaskClient;
  let pollingClient: ModernTaskClient;

  before(async () => {
    pushing = await startModernTaskServer({ pushTasks: true, pollIntervalMs: 50, workMs: 1000 });
    polling = await startModernTaskServer({ pollIntervalMs: 50, workMs: 50 });
    client = await createModernTaskClient(pushing.url);
    pollingClient = await createModernTaskClient(polling.url);
  });
  after(async () => {
    await client.close();
    await pollingClient.close();
    await pushing.close();
    await polling.close();
  });

  it('acks the known taskIds, pushes every status change as tasks/get has it, then completes', async () => {
    const asking = await startTask(client, 'ask_name');
    const failing = await startTask(client, 'fail_task');
    await waitForModernStatus(client, asking, 'input_required');
    const listening = client.raw('subscriptions/listen', { notifications: { taskIds: [asking, failing, 'no-such-task'] } });
    await waitFor(() => pushing.tasks.listeners() === 1, 'the listen stream');
    const input = await snapshot(client, asking);
    const key = Object.keys(input.inputRequests as object)[0]!;
    await client.raw('tasks/update', { taskId: asking, inputResponses: { [key]: { action: 'accept', content: { name: 'Luca' } } } });
    await waitForModernStatus(client, asking, 'completed');

    const exchange = await listening;
    const listenId = exchange.request.body.id;
    assert.equal(exchange.status, 200);
    assert.match(exchange.headers.get('content-type') ?? '', /^text\/event-stream/);
    const [ack] = exchange.messages;
    assert.equal(ack?.method, 'notifications/subscriptions/acknowledged', 'the ack comes first');
    const ackParams = ack.params as { notifications: { taskIds: string[] }; _meta: Record<string, unknown> };
    assert.deepEqual(ackParams.notifications.taskIds.sort(), [asking, failing].sort(), 'an unknown id is left out');
    assert.equal(ackParams._meta[SUBSCRIPTION_ID], listenId);

    const pushed = notificationsOf(exchange);
    for (const note of pushed) {
      assertTaskObject('modern', 'notification', note);
      assert.equal((note.params as { _meta: Record<string, unknown> })._meta[SUBSCRIPTION_ID], listenId);
    }
    const statusesOf = (taskId: string): unknown[] =>
      pushed.map((n) => n.params as Record<string, unknown>).filter((p) => p.taskId === taskId).map((p) => p.status);
    assert.deepEqual(statusesOf(asking), ['working', 'completed']);
    assert.deepEqual(statusesOf(failing), ['failed']);
    for (const taskId of [asking, failing]) {
      const last = pushed.map((n) => n.params as Record<string, unknown>).filter((p) => p.taskId === taskId).at(-1)!;
      const { _meta, ...task } = last;
      assert.deepEqual(task, await snapshot(client, taskId), 'the terminal notification is the tasks/get answer');
    }

    const end = exchange.messages.at(-1)!;
    assert.equal(end.id, listenId);
    assert.equal((end.result as Record<string, unknown>).resultType, 'complete', 'ended gracefully once every task was terminal');
    assert.equal(((end.result as { _meta: Record<string, unknown> })._meta)[SUBSCRIPTION_ID], listenId);
    await waitFor(() => pushing.tasks.listeners() === 0, 'the listen to be released');
  });

  it('ends at once after the ack when every subscribed task is already terminal', async () => {
    const done = await startTask(client, 'slow_scan', { seconds: 0 });
    await waitForModernStatus(client, done, 'completed');
    const exchange = await client.raw('subscriptions/listen', { notifications: { taskIds: [done] } });
    assert.deepEqual(
      exchange.messages.map((m) => m.method ?? 'response'),
      ['notifications/subscriptions/acknowledged', 'response'],
    );
    assert.deepEqual((exchange.messages[0]!.params as { notifications: unknown }).notifications, { taskIds: [done] });
  });

  it('stops pushing and releases the subscription when the client closes the stream', async () => {
    const long = await startTask(client, 'slow_scan', { seconds: 30 });
    const closer = new AbortController();
    const listening = client.raw('subscriptions/listen', { notifications: { taskIds: [long] } }, { signal: closer.signal });
    await waitFor(() => pushing.tasks.listeners() === 1, 'the listen stream');
    closer.abort();
    await assert.rejects(listening);
    await waitFor(() => pushing.tasks.listeners() === 0, 'the closed listen to be released');
    await client.cancelTask(long);
    await waitForModernStatus(client, long, 'cancelled');
  });

  it('answers -32021 to taskIds from a client that did not declare the extension', async () => {
    const taskId = await startTask(client, 'slow_scan', { seconds: 0 });
    for (const c of [client, pollingClient]) {
      const exchange = await c.raw('subscriptions/listen', { notifications: { taskIds: [taskId] } }, { envelope: 'plain' });
      assert.equal(exchange.status, 400);
      assert.equal(exchange.response?.error?.code, -32021);
      assert.deepEqual(exchange.response?.error?.data, { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
    }
  });

  it('without pushTasks, acknowledges without taskIds and ends as nothing else was asked', async () => {
    const taskId = await startTask(pollingClient, 'slow_scan', { seconds: 5 });
    const exchange = await pollingClient.raw('subscriptions/listen', { notifications: { taskIds: [taskId] } });
    assert.equal(exchange.status, 200);
    assert.deepEqual((exchange.messages[0]!.params as { notifications: unknown }).notifications, {});
    assert.equal(notificationsOf(exchange).length, 0);
    assert.equal((exchange.messages.at(-1)!.result as Record<string, unknown>).resultType, 'complete');
    await pollingClient.cancelTask(taskId);
  });
});
