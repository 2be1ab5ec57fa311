/**
 * Status push and the enumeration suspension (audit.enumeration.action: suspend): the handles a
 * subscriptions/listen names that are not the caller's count as refused lookups, and once the
 * principal is suspended its listens naming task handles are refused as its tasks/* are, while
 * its listens for anything else and other principals' listens go on.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { captureLines } from './support/reload-harness.js';
import { metricSample } from './support/harness.js';
import { waitFor } from '../support/wait.js';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { listen, type Listener } from './support/push-listener.js';

const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';
const THRESHOLD = 5;

describe('status push: a suspended prober', () => {
  let stack: TaskStack;
  const audit = captureLines();
  const clients: ModernTaskClient[] = [];
  const open: Listener[] = [];
  const listenAs = async (subject: string, notifications: Record<string, unknown>) => {
    const listener = await listen(stack.gw.url, await stack.bearer(subject), notifications);
    open.push(listener);
    return listener;
  };
  const startTask = async (subject: string) => {
    const client = await modernClient(stack, subject);
    clients.push(client);
    const created = await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
    return { client, taskId: String(created.response?.result?.taskId) };
  };

  before(async () => {
    stack = await startTaskStack({
      era: 'modern',
      policy: { audit: { enumeration: { threshold: THRESHOLD, window: '1m', action: 'suspend' } } },
      gatewayDeps: { auditDestination: audit.stream },
    });
  });
  after(async () => {
    for (const listener of open) listener.close();
    await Promise.all(clients.map((c) => c.close()));
    await stack?.close();
  });

  it('counts the guessed handles of a listen, then refuses the prober\'s listens naming handles', async () => {
    const olivia = await startTask('olivia');
    const mallory = await startTask('mallory');
    const guesses = Array.from({ length: 99 }, () => randomBytes(24).toString('base64url'));
    const probe = await listenAs('mallory', { taskIds: [...guesses, olivia.taskId] });
    await probe.ended;
    assert.equal(probe.status, 200);
    assert.deepEqual(probe.messages[0]?.method, ACKNOWLEDGED);
    assert.deepEqual(probe.messages[0]?.params?.notifications, { taskIds: [] }, 'nothing granted');

    // The refusals are counted after the answer: the suspension lands within the bound, audited once.
    const suspensions = () => audit.find('suspended');
    await waitFor(() => suspensions().length > 0, 'the suspension', 5000);
    assert.equal((suspensions()[0]!.principal as { subject: string }).subject, 'mallory');

    // Even for the prober's own task: it is suspended, not the handle.
    const listensBefore = stack.received('subscriptions/listen');
    const refused = await listenAs('mallory', { taskIds: [mallory.taskId] });
    assert.equal(refused.status, 429, JSON.stringify(refused.body ?? refused.messages));
    assert.equal((refused.body?.error as { code: number }).code, -31003);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal((await listenAs('mallory', { taskIds: [] })).status, 429, 'an empty taskIds is still a listen naming handles');
    assert.equal((await mallory.client.raw('tasks/get', { taskId: mallory.taskId })).status, 429, 'as its tasks/* are');
    assert.equal(stack.received('subscriptions/listen'), listensBefore, 'the backend saw none of them');

    // What probes nothing goes on: a listen for list changes only, and another principal's listen.
    const lists = await listenAs('mallory', { toolsListChanged: true });
    assert.equal(lists.status, 200);
    await lists.waitFor((m) => m.method === ACKNOWLEDGED, 4000, 'the backend\'s acknowledgement');
    lists.close();
    const owner = await listenAs('olivia', { taskIds: [olivia.taskId] });
    const ack = await owner.waitFor((m) => m.method === ACKNOWLEDGED);
    assert.deepEqual(ack.params?.notifications, { taskIds: [olivia.taskId] });
    owner.close();

    assert.ok((await metricSample(stack.gw.adminUrl, 'taskgate_limit_rejections_total{limit="suspended",scope="tasks"}'))! >= 3);
    assert.equal(suspensions().length, 1, 'audited once, when the suspension started');
    await olivia.client.raw('tasks/cancel', { taskId: olivia.taskId });
  });
});
