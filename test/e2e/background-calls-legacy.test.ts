/**
 * Background calls, 2025-11-25: an SDK 1.x server with plain tools (none of its own tasks),
 * driven by the real SDK 1.x Client and its default callTool, with the request timeout
 * lowered instead of waiting a minute: directly the long call times out; through taskgate it
 * is answered with a handle, and the status tool the gateway adds returns the tool's result.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startExampleServer, type ExampleServerStats } from '../../examples/mcp-server/server.js';
import { isHandleShaped } from '../../src/tasks/handle.js';
import { handleIn, runAgent, viewOf, type CallTool } from './support/background-agent.js';
import { legacyClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { createLegacyTask, recordTaskStatus, waitForLegacyStatus } from './support/task-waits.js';
import { waitFor, waitForValue } from '../support/wait.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** The client's request timeout in these tests, in place of the SDK's 60 s. */
const CLIENT_TIMEOUT_MS = 1500;
const stats = (stack: TaskStack) => stack.backends[0]!.stats as ExampleServerStats;

function agentOf(client: Client): CallTool {
  return async (name, args) => viewOf(await client.callTool({ name, arguments: args }, undefined, { timeout: CLIENT_TIMEOUT_MS }));
}

function relatedTaskOf(result: { _meta?: Record<string, unknown> }): string | undefined {
  return (result._meta?.[RELATED_TASK] as { taskId?: string } | undefined)?.taskId;
}

describe('background calls for 2025-11-25 clients without tasks', () => {
  let stack: TaskStack;
  let alice: Client;
  const call = (client: Client, name: string, args: Record<string, unknown>) =>
    client.callTool({ name, arguments: args }, undefined, { timeout: CLIENT_TIMEOUT_MS }) as Promise<CallToolResult>;
  /** Status calls until the answer is no longer "still running": that answer. */
  const untilEnded = async (client: Client, handle: string) => {
    for (;;) {
      const result = await call(client, 'taskgate_task_status', { taskId: handle });
      if (!/still running/.test(viewOf(result).text)) return result;
    }
  };
  /** A call the gateway detached: its handle. */
  const detach = async (client: Client, name: string, args: Record<string, unknown>) => {
    const result = await call(client, name, args);
    const handle = relatedTaskOf(result);
    assert.ok(handle && isHandleShaped(handle), `detached: ${JSON.stringify(result)}`);
    return handle;
  };

  const backgroundCount = async (outcome: string) => {
    const metric = await stack.gw.gateway.metrics.registry.getSingleMetric('taskgate_background_calls_total')?.get();
    return metric?.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
  };

  before(async () => {
    stack = await startTaskStack({
      era: 'legacy',
      plain: true,
      providedTasks: { tools: ['slow_report'] },
      backgroundCalls: { tools: ['slow_report', 'report_error', 'slow_structured', 'notify_progress'], detachAfter: '300ms', statusWait: '700ms', timeout: '3s' },
      tasks: { poll: { default: '200ms' }, tools: { report_error: { readOnce: true }, notify_progress: { maxTtl: '1500ms' } } },
    });
    alice = await legacyClient(stack, 'alice');
    // A host lists the tools first; so the gateway learns which have an outputSchema.
    await alice.listTools();
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('directly, the long call times out at the client\'s request timeout', async () => {
    const server = await startExampleServer({ name: 'direct', tasks: false });
    const client = new Client({ name: 'direct', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      await assert.rejects(call(client, 'slow_report', { seconds: 2, steps: 1 }), (error: unknown) => error instanceof McpError && error.code === ErrorCode.RequestTimeout);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('lists the status and cancel tools beside the backend\'s own, which are listed as the backend lists them', async () => {
    const { tools } = await alice.listTools();
    const names = tools.map((t) => t.name);
    assert.deepEqual(names.slice(-2), ['taskgate_task_status', 'taskgate_task_cancel']);
    assert.deepEqual(tools.find((t) => t.name === 'taskgate_task_status')?.inputSchema.required, ['taskId']);
    assert.match(tools.find((t) => t.name === 'taskgate_task_status')?.description ?? '', /never guess/);
    assert.equal(stack.received('tools/call'), 0);
  });

  it('through taskgate the same call is detached after detachAfter and completes through the status tool', async () => {
    stats(stack).reset();
    const run = await runAgent(agentOf(alice), 'slow_report', { seconds: 2, steps: 2 });
    assert.equal(run.first.isError, false);
    assert.match(run.first.text, /still running, in the background/);
    assert.match(run.first.text, /call the tool `taskgate_task_status` with \{"taskId":"[^"]+"\}/);
    assert.ok(run.checks.length >= 2, 'at least one "still running" answer before the result');
    assert.match(run.checks[0]!.text, /is still running/);
    assert.equal(run.final.isError, false);
    assert.equal(run.final.text, 'Report ready after 2s');
    const calls = stats(stack).requests.filter((r) => r.rpcMethod === 'tools/call');
    assert.equal(calls.length, 1, 'the backend saw the call once and no status call');
  });

  it('the completed status answer is the tool\'s own result with the related-task _meta', async () => {
    const handle = await detach(alice, 'slow_report', { seconds: 0.8, steps: 1 });
    const result = await untilEnded(alice, handle);
    assert.deepEqual(result.content, [{ type: 'text', text: 'Report ready after 0.8s' }]);
    assert.equal(relatedTaskOf(result), handle);
    // Not read once: asked again, the same answer.
    assert.deepEqual((await call(alice, 'taskgate_task_status', { taskId: handle, wait: 0 })).content, result.content);
  });

  it('a fast call goes back as the backend answered it, untouched', async () => {
    const direct = await call(alice, 'echo', { text: 'not listed' });
    const listed = await call(alice, 'slow_report', { seconds: 0.05, steps: 1 });
    assert.deepEqual(listed, { content: [{ type: 'text', text: 'Report ready after 0.05s' }] });
    assert.deepEqual(direct, { content: [{ type: 'text', text: 'not listed' }] });
  });

  it('a status call without a wait answers at once while the call runs, with the backend\'s status quoted', async () => {
    const handle = await detach(alice, 'slow_report', { seconds: 3, steps: 6 });
    let running = viewOf(await call(alice, 'taskgate_task_status', { taskId: handle, wait: 0 }));
    // Progress reaches the task's statusMessage within half a second of the backend's report.
    for (let i = 0; i < 30 && !/latest status/.test(running.text); i++) running = viewOf(await call(alice, 'taskgate_task_status', { taskId: handle, wait: 0 }));
    assert.equal(running.isError, false);
    assert.match(running.text, new RegExp(`is still running\\. Its latest status: "step \\d of 6"\\.`));
    assert.match(running.text, /no sooner than 1 second from now/);
    await call(alice, 'taskgate_task_cancel', { taskId: handle });
  });

  it('a status call sooner than the poll interval waits it out rather than being refused', async () => {
    const handle = await detach(alice, 'slow_report', { seconds: 3, steps: 1 });
    // The first call books the poll on arrival; the second, right after it, is early.
    const started = Date.now();
    await call(alice, 'taskgate_task_status', { taskId: handle, wait: 0 });
    const early = await call(alice, 'taskgate_task_status', { taskId: handle, wait: 0 });
    assert.equal(early.isError, false);
    assert.match(viewOf(early).text, /is still running/);
    // tasks.poll.default is 200ms, less the 50ms tolerance, from the first call's arrival.
    assert.ok(Date.now() - started >= 150, `the early call waited out the interval (${Date.now() - started} ms)`);
    await call(alice, 'taskgate_task_cancel', { taskId: handle });
  });

  it('a tool error is the tool\'s own result; a read-once tool\'s handle is forgotten once it was read', async () => {
    const handle = await detach(alice, 'report_error', { ms: 600 });
    const result = await untilEnded(alice, handle);
    assert.equal(result.isError, true);
    assert.match(viewOf(result).text, /source unavailable/);
    const again = await call(alice, 'taskgate_task_status', { taskId: handle, wait: 0 });
    assert.deepEqual(again, await call(alice, 'taskgate_task_status', { taskId: 'x'.repeat(32), wait: 0 }));
  });

  it('a call past backgroundCalls.timeout ends failed, saying why, as an error', async () => {
    const run = await runAgent(agentOf(alice), 'slow_report', { seconds: 10, steps: 1 });
    assert.equal(run.final.isError, true);
    assert.match(run.final.text, /failed without a result: "the backend did not answer within 3000 ms"/);
  });

  it('the cancel tool stops the call (the backend sees the cancellation) and the status says cancelled', async () => {
    stats(stack).reset();
    const handle = await detach(alice, 'slow_report', { seconds: 30, steps: 1 });
    const cancelled = viewOf(await call(alice, 'taskgate_task_cancel', { taskId: handle }));
    assert.equal(cancelled.isError, false);
    assert.match(cancelled.text, /is cancelled; the gateway stopped it/);
    await waitFor(() => stats(stack).cancelled > 0, 'the backend\'s tool to see notifications/cancelled', 3000, 30);
    assert.equal(stats(stack).cancelled, 1, 'the backend\'s tool saw notifications/cancelled');
    const status = viewOf(await call(alice, 'taskgate_task_status', { taskId: handle }));
    assert.equal(status.isError, true);
    assert.match(status.text, /was cancelled; it has no result/);
    const twice = viewOf(await call(alice, 'taskgate_task_cancel', { taskId: handle }));
    assert.match(twice.text, /had already ended \(cancelled\); nothing was cancelled/);
  });

  it('another principal\'s status and cancel calls get exactly the unknown-handle answer', async () => {
    const handle = await detach(alice, 'slow_report', { seconds: 2, steps: 1 });
    const bob = await legacyClient(stack, 'bob');
    try {
      const unknown = await call(bob, 'taskgate_task_status', { taskId: 'A'.repeat(32), wait: 0 });
      assert.equal(unknown.isError, true);
      assert.match(viewOf(unknown).text, /No background call with this handle is known/);
      assert.equal(relatedTaskOf(unknown), undefined);
      assert.deepEqual(await call(bob, 'taskgate_task_status', { taskId: handle, wait: 0 }), unknown);
      assert.deepEqual(await call(bob, 'taskgate_task_cancel', { taskId: handle }), unknown);
      assert.deepEqual(await call(bob, 'taskgate_task_status', { taskId: 'not a handle' }), unknown);
    } finally {
      await bob.close();
    }
    // Alice's call went on untouched.
    assert.equal(viewOf(await untilEnded(alice, handle)).text, 'Report ready after 2s');
  });

  it('a tool with an outputSchema is never detached: the client gets its structured result (or times out, as without the gateway)', async () => {
    const result = await alice.callTool({ name: 'slow_structured', arguments: { seconds: 0.6 } }, CallToolResultSchema, { timeout: 5000 });
    assert.deepEqual(result.structuredContent, { report: 'ready', seconds: 0.6 });
    assert.equal(relatedTaskOf(result), undefined);
  });

  it('a result nobody reads is forgotten at the end of its lifetime, and counted abandoned', async () => {
    const handle = await detach(alice, 'notify_progress', { count: 3, delayMs: 1000 });
    // Not asked about: the lifetime (tools.notify_progress.maxTtl) ends with its result unread.
    const abandoned = await waitForValue(async () => (await backgroundCount('abandoned')) || undefined, 'the call to be counted abandoned', 10_000, 100);
    assert.equal(abandoned, 1);
    const status = viewOf(await call(alice, 'taskgate_task_status', { taskId: handle, wait: 0 }));
    assert.match(status.text, /No background call with this handle is known/);
  });

  it('counts every outcome in taskgate_background_calls_total', async () => {
    for (const outcome of ['answered', 'detached', 'delivered', 'cancelled']) assert.ok((await backgroundCount(outcome)) > 0, outcome);
  });

  it('a client that asks for a task keeps getting tasks exactly as before', async () => {
    const task = await createLegacyTask(alice, 'slow_report', { seconds: 0.5, steps: 1 });
    assert.equal(task.status, 'working');
    assert.equal((await waitForLegacyStatus(alice, task.taskId, ['completed'])).status, 'completed');
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.match(JSON.stringify(result.content), /Report ready/);
  });

  it('pushes no notifications/tasks/status for a background call on the session\'s GET stream (its client knows no tasks)', async () => {
    const client = await legacyClient(stack, 'alice-push');
    try {
      const pushed = recordTaskStatus(client);
      await client.listTools();
      const handle = await detach(client, 'slow_report', { seconds: 1, steps: 1 });
      // A task the client asked for, in the same session, ending after the background call:
      // its completion on the GET stream comes after anything pushed for the background call.
      const task = await createLegacyTask(client, 'slow_report', { seconds: 2, steps: 1 });
      assert.equal(viewOf(await untilEnded(client, handle)).text, 'Report ready after 1s');
      await waitFor(() => pushed.statusesOf(task.taskId).includes('completed'), 'the completion pushed on the GET stream', 5000, 50);
      assert.deepEqual(pushed.statusesOf(task.taskId), ['completed'], 'the GET stream carries the task\'s status');
      assert.deepEqual(pushed.statusesOf(handle), []);
    } finally {
      await client.close();
    }
  });

  it('handleIn reads the handle a detached text names (the agent helper itself)', () => {
    assert.equal(handleIn('x\nBackground call handle: abc_DEF-1\ny'), 'abc_DEF-1');
  });
});
