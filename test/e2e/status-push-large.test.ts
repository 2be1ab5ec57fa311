/**
 * Status push of results larger than a listener's buffer (tasks.push.bufferBytes, 256 KiB by
 * default): a 2026-07-28 SDK client listening gets a ~500 KiB result inline and its listen's
 * graceful end, again when it listens once more after the task ended, and two such results
 * ending together; a listener that does not read is still cut off, and counted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { metricSample } from './support/harness.js';
import { waitFor } from '../support/wait.js';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { PROTOCOL_VERSION, TASKS_EXTENSION, type ModernTaskClient } from './support/modern-client.js';
import { listen, taskIn, type Listener } from './support/push-listener.js';

const RESULT_KIB = 500;
const DROPPED = 'taskgate_push_notifications_total{outcome="dropped",reason="slow_listener"}';

type Notification = { method: string; params?: Record<string, unknown> };

/** The text of a completed notification's CallToolResult. */
function resultText(params: Record<string, unknown> | undefined): string | undefined {
  const content = (params?.result as { content?: Array<{ text?: string }> } | undefined)?.content;
  return content?.[0]?.text;
}

/** The MCP SDK 2.x client, pinned to 2026-07-28 and declaring the tasks extension, as a listener. */
async function sdkListener(stack: TaskStack, subject: string): Promise<{ client: Client; seen: Notification[] }> {
  const capabilities = { extensions: { [TASKS_EXTENSION]: {} } } as never;
  const client = new Client({ name: 'sdk-listener', version: '1.0.0' }, { versionNegotiation: { mode: { pin: PROTOCOL_VERSION } }, capabilities });
  const seen: Notification[] = [];
  // notifications/tasks is the extension's: the SDK hands it to the fallback handler.
  client.fallbackNotificationHandler = async (notification) => {
    seen.push(notification as Notification);
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.gw.url), { requestInit: { headers: { authorization: await stack.bearer(subject) } } }));
  return { client, seen };
}

describe('status push: results larger than the listener buffer', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  const closers: Array<() => unknown> = [];
  const startLarge = async (kib: number, seconds: number) => {
    const created = await alice.raw('tools/call', { name: 'large_result', arguments: { kib, seconds } });
    const taskId = created.response?.result?.taskId;
    assert.equal(typeof taskId, 'string', JSON.stringify(created.response));
    return taskId as string;
  };

  before(async () => {
    // Stalls are cut after 1 s, so the slow listener below is seen within the test's bounds.
    stack = await startTaskStack({ era: 'modern', pollIntervalMs: 100, tasks: { push: { stallTimeout: '1s' } } });
    alice = await modernClient(stack, 'alice');
  });
  after(async () => {
    for (const close of closers) await close();
    await alice?.close();
    await stack?.close();
  });

  it('pushes a ~500 KiB result inline to an SDK client listening, then ends the listen gracefully; and again on a second listen', async () => {
    const taskId = await startLarge(RESULT_KIB, 0.5);
    for (const round of ['while it runs', 'after it ended']) {
      const { client, seen } = await sdkListener(stack, 'alice');
      closers.push(() => client.close());
      const subscription = await client.listen({ taskIds: [taskId] } as never);
      const outcome = await Promise.race([subscription.closed, new Promise((resolve) => setTimeout(resolve, 10_000, 'no end within 10 s'))]);
      assert.equal(outcome, 'graceful', `${round}: the listen ended with its response, not cut off`);
      const done = seen.find((n) => n.method === 'notifications/tasks' && n.params?.status === 'completed');
      assert.ok(done, `${round}: the completion arrived; got ${seen.map((n) => n.params?.status).join(', ')}`);
      assert.equal(resultText(done.params)?.length, RESULT_KIB * 1024, `${round}: the whole result, inline`);
      await client.close();
    }
    assert.equal(await metricSample(stack.gw.adminUrl, DROPPED), undefined, 'nothing was dropped');
  });

  it('delivers two such results ending together to a listener that reads', async () => {
    const first = await startLarge(RESULT_KIB, 0.3);
    const second = await startLarge(RESULT_KIB, 0.3);
    const listener = await listen(stack.gw.url, await stack.bearer('alice'), { taskIds: [first, second] });
    closers.push(() => listener.close());
    for (const taskId of [first, second]) {
      const done = await listener.waitFor(taskIn(taskId, 'completed'), 10_000, `the completion of ${taskId}`);
      assert.equal(resultText(done.params)?.length, RESULT_KIB * 1024);
    }
    await listener.waitFor((m) => 'result' in m, 4000, 'the listen response');
    assert.equal(await metricSample(stack.gw.adminUrl, DROPPED), undefined, 'nothing was dropped');
  });

  it('still cuts off a listener that does not read, and counts it', async () => {
    // More than the socket and the kernel take between them: 4 results of 4 MiB.
    const taskIds = [];
    for (let i = 0; i < 4; i++) taskIds.push(await startLarge(4096, 0.2));
    const open = await metricSample(stack.gw.adminUrl, 'taskgate_push_subscriptions');
    const stalled: Listener = await listen(stack.gw.url, await stack.bearer('alice'), { taskIds }, { read: false });
    closers.push(() => stalled.close());
    assert.equal(stalled.status, 200);
    await waitFor(async () => ((await metricSample(stack.gw.adminUrl, DROPPED)) ?? 0) >= 1, 'the slow listener to be cut off', 15_000);
    await waitFor(async () => (await metricSample(stack.gw.adminUrl, 'taskgate_push_subscriptions')) === open, 'its subscription to be gone', 5000);
    // The tasks themselves are untouched: the owner polls the results.
    const polled = await alice.raw('tasks/get', { taskId: taskIds[0] });
    assert.equal(polled.response?.result?.status, 'completed');
  });
});
