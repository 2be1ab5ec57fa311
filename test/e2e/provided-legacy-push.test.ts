/**
 * 2025-11-25 status push for tasks the gateway runs itself: the SDK 1.x client opens its
 * standalone GET stream after initialize, and a provided task's status changes arrive on it as
 * notifications/tasks/status, to the session that created the task and to no other.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { waitFor } from '../support/wait.js';
import { legacyClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { assertTaskObject } from './support/task-schemas.js';
import { createLegacyTask, recordTaskStatus, waitForLegacyStatus, type TaskStatusRecording } from './support/task-waits.js';

describe('2025-11-25 status push for tasks the gateway runs', () => {
  let stack: TaskStack;
  const clients: Client[] = [];
  const connect = async (subject: string): Promise<{ client: Client; pushed: TaskStatusRecording }> => {
    const client = await legacyClient(stack, subject);
    // elicit_color asks for a colour.
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { color: 'teal' } }));
    clients.push(client);
    return { client, pushed: recordTaskStatus(client) };
  };
  const push = () => stack.gw.gateway.provided.legacyPush;
  const counted = async (outcome: string) =>
    (await stack.gw.gateway.metrics.legacyStatusNotifications.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;

  before(async () => {
    stack = await startTaskStack({
      era: 'legacy',
      plain: true,
      providedTasks: { tools: ['slow_report', 'elicit_color'] },
      tasks: { poll: { default: '100ms' } },
    });
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await stack?.close();
  });

  it('pushes each status change to the creating session, as its tasks/get answers it, and to no one else', async () => {
    const alice = await connect('alice');
    const aliceElsewhere = await connect('alice');
    const bob = await connect('bob');
    // Each SDK client opens its GET stream once initialized.
    await waitFor(() => push().sessions === 3, 'three GET streams');

    const report = await createLegacyTask(alice.client, 'slow_report', { seconds: 0.4, steps: 2 });
    const asking = await createLegacyTask(alice.client, 'elicit_color');
    const bobs = await createLegacyTask(bob.client, 'slow_report', { seconds: 0.2, steps: 1 });

    await waitFor(() => alice.pushed.statusesOf(asking.taskId).includes('input_required'), 'input_required pushed');
    // The question reaches the client on tasks/result; its answer lets the call finish.
    const answered = await alice.client.experimental.tasks.getTaskResult(asking.taskId, CallToolResultSchema);
    assert.match(JSON.stringify(answered.content), /Colour: teal/);
    for (const taskId of [report.taskId, asking.taskId]) {
      await waitForLegacyStatus(alice.client, taskId, ['completed']);
      await waitFor(() => alice.pushed.statusesOf(taskId).at(-1) === 'completed', `completion of ${taskId} pushed`);
    }
    await waitFor(() => bob.pushed.statusesOf(bobs.taskId).at(-1) === 'completed', 'bob\'s own completion pushed');

    // Status changes only (not progress messages): the report went from working to completed.
    assert.deepEqual(alice.pushed.statusesOf(report.taskId), ['completed']);
    const asked = alice.pushed.statusesOf(asking.taskId);
    assert.equal(asked[0], 'input_required');
    assert.equal(asked.at(-1), 'completed');
    assert.ok(asked.every((status, i) => status !== asked[i - 1]), `a status is pushed once per change: ${asked.join(', ')}`);

    for (const message of alice.pushed.raw) {
      assertTaskObject('legacy', 'notification', message);
      assert.equal((message.params as Record<string, unknown>)._meta, undefined, 'no related-task _meta on a status notification');
    }
    for (const taskId of [report.taskId, asking.taskId]) {
      const last = alice.pushed.raw.filter((m) => (m.params as { taskId: string }).taskId === taskId).at(-1);
      const polled = await alice.client.experimental.tasks.getTask(taskId);
      assert.deepEqual(last?.params, { ...polled }, 'the notification is the task as tasks/get answers it');
    }

    assert.deepEqual(aliceElsewhere.pushed.raw, [], 'the same principal\'s other session hears nothing of these tasks');
    assert.ok(bob.pushed.raw.every((m) => (m.params as { taskId: string }).taskId === bobs.taskId), 'bob hears only of his own task');
    assert.ok((await counted('delivered')) >= 3);
  });

  it('lets go of a session once its GET stream closes', async () => {
    const carol = await connect('carol');
    await waitFor(() => push().sessions === 4, 'carol\'s GET stream');
    await carol.client.close();
    await waitFor(() => push().sessions === 3, 'carol\'s session to be let go');
  });
});
