/**
 * Background calls, 2026-07-28: the 2.x SDK's plain server (no task runtime) behind the
 * gateway, driven by the real 2.x client (@modelcontextprotocol/client) and its default
 * callTool with the request timeout lowered: directly the long call times out; through
 * taskgate the client, which never declares the tasks extension, gets a handle and the
 * status tool returns the tool's result. A client that declares the extension gets tasks.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { startModernTaskServer } from '../../examples/modern-task-server/server.js';
import { isHandleShaped } from '../../src/tasks/handle.js';
import { runAgent, viewOf, type CallTool } from './support/background-agent.js';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { waitFor } from '../support/wait.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const CLIENT_TIMEOUT_MS = 1500;

async function sdkClient(url: string, authorization?: string): Promise<Client> {
  // 'auto': server/discover first, so the client speaks 2026-07-28 to a server that offers it.
  const client = new Client({ name: 'background-2x', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const headers: Record<string, string> = authorization ? { authorization } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }, { timeout: CLIENT_TIMEOUT_MS });
const agentOf = (client: Client): CallTool => async (name, args) => viewOf(await call(client, name, args));
const relatedTaskOf = (result: CallToolResult) => (result._meta?.[RELATED_TASK] as { taskId?: string } | undefined)?.taskId;

describe('background calls for 2026-07-28 clients without the tasks extension', () => {
  let stack: TaskStack;
  let alice: Client;
  const untilEnded = async (client: Client, handle: string) => {
    for (;;) {
      const result = await call(client, 'taskgate_task_status', { taskId: handle });
      if (!/still running/.test(viewOf(result).text)) return result;
    }
  };
  const detach = async (client: Client, name: string, args: Record<string, unknown>) => {
    const handle = relatedTaskOf(await call(client, name, args));
    assert.ok(handle && isHandleShaped(handle));
    return handle;
  };

  before(async () => {
    stack = await startTaskStack({
      era: 'modern',
      plain: true,
      workMs: 800,
      providedTasks: { tools: ['slow_scan'], promoteAfter: '200ms' },
      backgroundCalls: { tools: 'all', detachAfter: '300ms', statusWait: '700ms' },
      tasks: { poll: { default: '200ms' } },
    });
    alice = await sdkClient(stack.gw.url, await stack.bearer('alice'));
    await alice.listTools();
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('directly, the long call times out at the client\'s request timeout', async () => {
    const server = await startModernTaskServer({ name: 'direct', tasks: false });
    const client = await sdkClient(server.url);
    try {
      await assert.rejects(call(client, 'slow_scan', { seconds: 2 }), /timed out|timeout/i);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('through taskgate the same call is detached and completes through the status tool', async () => {
    stack.modern[0]!.stats.reset();
    const run = await runAgent(agentOf(alice), 'slow_scan', { seconds: 2 });
    assert.equal(run.first.isError, false);
    assert.match(run.first.text, /`slow_scan` is still running, in the background/);
    assert.equal(run.final.isError, false);
    assert.equal(run.final.text, 'Scan finished after 2s');
    const calls = stack.modern[0]!.stats.requests.filter((r) => r.rpcMethod === 'tools/call');
    assert.equal(calls.length, 1, 'the backend saw one call and no status call');
  });

  it('lists the task tools only for a request that does not declare the tasks extension', async () => {
    const { tools } = await alice.listTools();
    assert.ok(tools.some((t) => t.name === 'taskgate_task_status'));
    const taskAware = await modernClient(stack, 'alice');
    try {
      const listed = (await taskAware.raw('tools/list', {})).response?.result?.tools as { name: string }[];
      assert.ok(listed.some((t) => t.name === 'slow_scan'));
      assert.ok(!listed.some((t) => t.name.startsWith('taskgate_')));
      const plain = (await taskAware.raw('tools/list', {}, { envelope: 'plain' })).response?.result?.tools as { name: string }[];
      assert.deepEqual(plain.slice(-2).map((t) => t.name), ['taskgate_task_status', 'taskgate_task_cancel']);
    } finally {
      await taskAware.close();
    }
  });

  it('completed: the tool\'s own result, a tool error included, with the related-task _meta', async () => {
    const handle = await detach(alice, 'tool_error', {});
    const result = await untilEnded(alice, handle);
    assert.equal(result.isError, true);
    assert.match(viewOf(result).text, /the scanned file is unreadable/);
    assert.equal(relatedTaskOf(result), handle);
  });

  it('failed: a JSON-RPC error of the backend is an error result quoting its message', async () => {
    const handle = await detach(alice, 'fail_task', {});
    const result = viewOf(await untilEnded(alice, handle));
    assert.equal(result.isError, true);
    assert.match(result.text, /failed without a result: "Simulated failure: upstream API rate limit exceeded"/);
  });

  it('a fast call goes back as the backend answered it', async () => {
    const result = await call(alice, 'slow_scan', { seconds: 0 });
    assert.deepEqual(result.content, [{ type: 'text', text: 'Scan finished after 0s' }]);
    assert.equal(relatedTaskOf(result), undefined);
  });

  it('cancel closes the backend call', async () => {
    stack.modern[0]!.stats.reset();
    const handle = await detach(alice, 'slow_scan', { seconds: 30 });
    assert.match(viewOf(await call(alice, 'taskgate_task_cancel', { taskId: handle })).text, /is cancelled/);
    await waitFor(() => stack.modern[0]!.stats.aborted > 0, 'the backend to see its call closed', 3000, 30);
    assert.equal(stack.modern[0]!.stats.aborted, 1, 'the backend saw its call closed');
    assert.match(viewOf(await call(alice, 'taskgate_task_status', { taskId: handle })).text, /was cancelled/);
  });

  it('another principal gets exactly the unknown-handle answer', async () => {
    const handle = await detach(alice, 'slow_scan', { seconds: 1 });
    const bob = await sdkClient(stack.gw.url, await stack.bearer('bob'));
    try {
      const unknown = await call(bob, 'taskgate_task_status', { taskId: 'B'.repeat(32), wait: 0 });
      assert.equal(unknown.isError, true);
      assert.deepEqual(await call(bob, 'taskgate_task_status', { taskId: handle, wait: 0 }), unknown);
      assert.deepEqual(await call(bob, 'taskgate_task_cancel', { taskId: handle }), unknown);
    } finally {
      await bob.close();
    }
    assert.equal(viewOf(await untilEnded(alice, handle)).text, 'Scan finished after 1s');
  });

  it('a client that declares the tasks extension keeps getting tasks', async () => {
    const taskAware = await modernClient(stack, 'alice');
    try {
      const created = (await taskAware.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 1 } })).response?.result;
      assert.equal(created?.resultType, 'task');
      assert.ok(isHandleShaped(created?.taskId));
    } finally {
      await taskAware.close();
    }
  });
});
