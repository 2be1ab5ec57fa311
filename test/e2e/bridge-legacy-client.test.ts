/**
 * Bridging, 2025-11-25 client → backend with only 2026-07-28 tasks: the real SDK 1.x client
 * (experimental.tasks, callToolStream) through the gateway against a real
 * @modelcontextprotocol/server 2.4.0 with its own task handlers (examples/modern-task-server,
 * dual-era: it serves 2025 clients statelessly, with no 2025 tasks). Every lifecycle.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isHandleShaped } from '../../src/tasks/handle.js';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { generationSeen, startBridgeGateway, startModernBackendStack, type BridgeStack, type ModernBackendStack } from './support/bridge-harness.js';
import { legacyClient } from './support/task-harness.js';
import { createLegacyTask, waitForLegacyStatus } from './support/task-waits.js';
import { waitFor, waitForValue } from '../support/wait.js';

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

function textOf(result: CallToolResult | undefined): string {
  const first = result?.content[0];
  return first?.type === 'text' ? first.text : '';
}

function received(stack: ModernBackendStack, rpcMethod: string): Record<string, unknown>[] {
  return stack.backend.stats.requests.filter((r) => r.rpcMethod === rpcMethod).map((r) => r.body as Record<string, unknown>);
}

async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof McpError) return error;
    throw error;
  }
  assert.fail('expected a JSON-RPC error');
}

describe('bridge: 2025-11-25 client, backend with 2026-07-28 tasks only', () => {
  let stack: ModernBackendStack;
  let alice: Client;
  let bob: Client;
  const seen: string[] = [];
  before(async () => {
    stack = await startModernBackendStack({ tasks: { ttl: { max: '30s' }, poll: { floor: '200ms' } } });
    alice = await legacyClient(stack, 'alice', { name: 'Ada' }, stack.gw.url, seen);
    bob = await legacyClient(stack, 'bob');
  });
  after(async () => {
    await alice?.close();
    await bob?.close();
    await stack?.close();
  });

  it('learns what the backend serves and shows it to operators', async () => {
    assert.equal(await generationSeen(stack, stack.backend.url), '2026-07-28');
    assert.deepEqual(stack.gw.gateway.bridge.generations.of('tools', new URL(stack.backend.url).origin), {
      modern: true,
      modernTasks: true,
      legacy: true,
      legacyTasks: false,
      legacyTools: undefined,
    });
  });

  it('tells the 2025 client what the bridge can do: capabilities.tasks and taskSupport optional', async () => {
    const tasks = alice.getServerCapabilities()?.tasks;
    assert.deepEqual(tasks?.requests?.tools?.call, {});
    assert.deepEqual(tasks?.cancel, {});
    assert.deepEqual(tasks?.list, {}, 'principals are verified, so the gateway serves tasks/list');
    const { tools } = await alice.listTools();
    const scan = tools.find((tool) => tool.name === 'slow_scan');
    assert.equal(scan?.execution?.taskSupport, 'optional');
  });

  it('runs a 2026 task for a 2025 callToolStream: created, polled, result with related-task _meta', async () => {
    stack.backend.stats.reset();
    const kinds: string[] = [];
    let result: CallToolResult | undefined;
    let handle: string | undefined;
    const stream = alice.experimental.tasks.callToolStream({ name: 'slow_scan', arguments: { seconds: 0.5 } }, CallToolResultSchema, { task: { ttl: 60_000 } });
    for await (const message of stream) {
      kinds.push(message.type);
      if (message.type === 'taskCreated') handle = message.task.taskId;
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') assert.fail(message.error.message);
    }
    assert.equal(kinds[0], 'taskCreated');
    assert.ok(isHandleShaped(handle), `not a handle: ${handle}`);
    assert.equal(textOf(result), 'Scan finished after 0.5s');
    assert.equal((result?._meta?.['io.modelcontextprotocol/related-task'] as { taskId: string }).taskId, handle);

    const [call] = received(stack, 'tools/call');
    const params = call!.params as Record<string, unknown>;
    assert.equal(params.task, undefined, 'no 2025 task parameter reaches the 2026 backend');
    const meta = params._meta as Record<string, Record<string, Record<string, unknown>>>;
    assert.deepEqual(meta['io.modelcontextprotocol/clientCapabilities']!.extensions![TASKS_EXTENSION], {});
    const polls = stack.backend.stats.requests.filter((r) => r.rpcMethod === 'tasks/get');
    assert.ok(polls.length >= 1);
    // The backend's own id never reached the client: every answer it got names the handle.
    const backendId = String(polls[0]!.headers['mcp-name']);
    assert.ok(seen.length > 3);
    for (const body of seen) assert.ok(!body.includes(backendId), `the backend id reached the client: ${body.slice(0, 200)}`);
    for (const poll of polls) {
      assert.notEqual(poll.headers['mcp-name'], handle, 'the backend is asked by its own id');
      assert.equal(poll.headers['mcp-protocol-version'], '2026-07-28');
      assert.equal(poll.headers['mcp-session-id'], undefined);
    }
  });

  it('carries input: the 2026 inputRequests reach the client on tasks/result, its answer goes back as tasks/update', async () => {
    const before = received(stack, 'tasks/update').length;
    let result: CallToolResult | undefined;
    for await (const message of alice.experimental.tasks.callToolStream({ name: 'ask_name', arguments: {} }, CallToolResultSchema, { task: { ttl: 60_000 } })) {
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') assert.fail(message.error.message);
    }
    assert.equal(textOf(result), 'Hello, Ada');
    const updates = received(stack, 'tasks/update').slice(before);
    assert.equal(updates.length, 1);
    const responses = (updates[0]!.params as { inputResponses: Record<string, unknown> }).inputResponses;
    const [key, answer] = Object.entries(responses)[0]!;
    // The backend's own key (it makes its keys unique per task: "name-…"), never a gateway id.
    assert.match(key, /^name-/);
    assert.deepEqual(answer, { action: 'accept', content: { name: 'Ada' } });
  });

  it('cancels: the task is cancelled before the answer, the backend sees tasks/cancel, a second cancel is -32602', async () => {
    const task = await createLegacyTask(alice, 'slow_scan', { seconds: 30 });
    const cancelled = await alice.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    const cancels = received(stack, 'tasks/cancel');
    assert.ok(cancels.some((body) => (body.params as { taskId: string }).taskId !== task.taskId), 'the backend got its own id');
    assert.equal((await alice.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
    const again = await rpcError(alice.experimental.tasks.cancelTask(task.taskId));
    assert.equal(again.code, -32602);
    const result = await rpcError(alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
    assert.equal(result.code, -32603);
  });

  it('fails the 2025 way: a JSON-RPC error is a failed task whose tasks/result is that error', async () => {
    const task = await createLegacyTask(alice, 'fail_task');
    assert.equal((await waitForLegacyStatus(alice, task.taskId, ['failed', 'completed'])).status, 'failed');
    const error = await rpcError(alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema));
    assert.equal(error.code, -32603);
    assert.match(error.message, /rate limit exceeded/);
  });

  it('a tool error (2026 completed, isError) is a failed 2025 task whose result says so', async () => {
    const task = await createLegacyTask(alice, 'tool_error');
    assert.equal((await waitForLegacyStatus(alice, task.taskId, ['failed', 'completed'])).status, 'failed');
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(result.isError, true);
    assert.match(textOf(result as CallToolResult), /unreadable/);
  });

  it('a plain answer to a task request still gives the client its task, completed', async () => {
    const task = await createLegacyTask(alice, 'quick_echo', { text: 'at once' });
    assert.ok(isHandleShaped(task.taskId));
    assert.equal(task.status, 'completed');
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(textOf(result as CallToolResult), 'at once');
  });

  it('another principal is refused exactly like an unknown handle, and lists only their own', async () => {
    const task = await createLegacyTask(alice, 'slow_scan', { seconds: 5 });
    const foreign = await rpcError(bob.experimental.tasks.getTask(task.taskId));
    const unknown = await rpcError(bob.experimental.tasks.getTask('A'.repeat(32)));
    assert.equal(foreign.code, -32602);
    assert.equal(foreign.message, unknown.message);
    const foreignCancel = await rpcError(bob.experimental.tasks.cancelTask(task.taskId));
    assert.equal(foreignCancel.message, unknown.message);
    const own = await alice.experimental.tasks.listTasks();
    assert.ok(own.tasks.some((t) => t.taskId === task.taskId));
    const others = await bob.experimental.tasks.listTasks();
    assert.ok(!others.tasks.some((t) => t.taskId === task.taskId));
    await alice.experimental.tasks.cancelTask(task.taskId);
  });

  it('counts the bridged operations by client and backend generation', async () => {
    const counted = await stack.gw.gateway.metrics.registry.getSingleMetric('taskgate_bridge_operations_total')?.get();
    const calls = counted?.values.filter((v) => v.labels.method === 'tools/call' && v.labels.client === '2025-11-25' && v.labels.backend === '2026-07-28' && v.labels.outcome === 'ok');
    assert.ok((calls?.[0]?.value ?? 0) >= 5);
  });
});

describe('bridge: a bridged task\'s lifetime ends', () => {
  let stack: ModernBackendStack;
  let alice: Client;
  before(async () => {
    stack = await startModernBackendStack({ tasks: { ttl: { max: '1s', default: '1s' } } });
    alice = await legacyClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('is forgotten at its capped TTL and cancelled at the backend', async () => {
    const task = await createLegacyTask(alice, 'slow_scan', { seconds: 30 });
    assert.equal(task.ttl, 1000);
    const error = await waitForValue(
      () => alice.experimental.tasks.getTask(task.taskId).then(() => undefined, (e: unknown) => (e instanceof McpError ? e : undefined)),
      'tasks/get to be refused',
      10_000,
      250,
    );
    assert.equal(error?.code, -32602, 'the handle is unknown once its lifetime ended');
    await waitFor(() => received(stack, 'tasks/cancel').length > 0, 'the backend to be told', 5000, 50);
    const cancel = stack.backend.stats.requests.find((r) => r.rpcMethod === 'tasks/cancel');
    assert.ok(cancel, 'the backend was told');
    assert.equal(cancel.headers['mcp-protocol-version'], '2026-07-28', 'in its own generation');
  });
});

describe('bridge: off for the upstream', () => {
  let stack: ModernBackendStack;
  let alice: Client;
  before(async () => {
    stack = await startModernBackendStack({ upstream: { bridge: 'off' } });
    alice = await legacyClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('offers a 2025 client no tasks, and relays its calls to the backend as they are', async () => {
    assert.equal(alice.getServerCapabilities()?.tasks, undefined);
    const { tools } = await alice.listTools();
    assert.equal(tools.find((tool) => tool.name === 'slow_scan')?.execution?.taskSupport, undefined);
    const result = await alice.callTool({ name: 'quick_echo', arguments: { text: 'plain' } });
    assert.equal(textOf(result as CallToolResult), 'plain');
    assert.ok(!stack.backend.stats.requests.some((r) => r.rpcMethod === 'server/discover'), 'no probe either');
  });
});

describe('bridge: limits hold for bridged tasks', () => {
  let stack: ModernBackendStack;
  let alice: Client;
  let bob: Client;
  before(async () => {
    stack = await startModernBackendStack({ tasks: { maxLivePerPrincipal: 1 } });
    alice = await legacyClient(stack, 'alice');
    bob = await legacyClient(stack, 'bob');
  });
  after(async () => {
    await alice?.close();
    await bob?.close();
    await stack?.close();
  });

  it('refuses a creation past the live-task limit with -31002 and cancels it at the backend', async () => {
    await createLegacyTask(alice, 'slow_scan', { seconds: 30 });
    await assert.rejects(createLegacyTask(alice, 'slow_scan', { seconds: 30 }), /-31002|live task limit/);
    await waitFor(() => received(stack, 'tasks/cancel').length > 0, 'the refused task to be cancelled upstream', 5000, 50);
    assert.equal(received(stack, 'tasks/cancel').length, 1, 'the refused task was cancelled upstream');
    const other = await createLegacyTask(bob, 'slow_scan', { seconds: 30 });
    assert.ok(isHandleShaped(other.taskId), 'the limit is per principal');
  });
});

describe('bridge: 2025-11-25 client, backend that refuses 2025 altogether', () => {
  let backend: ModernTaskServer;
  let stack: BridgeStack;
  let alice: Client;
  before(async () => {
    // The 2.4.0 server with legacy: 'reject': a 2025 initialize gets -32022 from it.
    backend = await startModernTaskServer({ name: 'modern-only', pollIntervalMs: 100, workMs: 100 });
    stack = await startBridgeGateway([backend.url], {});
    alice = await legacyClient(stack, 'alice', { name: 'Ada' });
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
    await backend?.close();
  });

  it('answers initialize itself from server/discover: the backend\'s tools and the tasks the bridge serves', async () => {
    assert.equal(await generationSeen(stack, backend.url), '2026-07-28');
    assert.equal(alice.getServerVersion()?.name, 'modern-only');
    const capabilities = alice.getServerCapabilities();
    assert.deepEqual(capabilities?.tools !== undefined, true);
    assert.deepEqual(capabilities?.tasks?.requests?.tools?.call, {});
    assert.deepEqual(capabilities?.tasks?.list, {});
    const initializes = backend.stats.requests.filter((r) => r.rpcMethod === 'initialize');
    const names = initializes.map((r) => (r.body as { params?: { clientInfo?: { name?: string } } }).params?.clientInfo?.name);
    assert.deepEqual(names, ['taskgate'], 'only the gateway\'s probe: the client\'s initialize never reached the backend');
  });

  it('relays tools/list and a plain call as 2026 requests, in 2025 shapes', async () => {
    const { tools } = await alice.listTools();
    const scan = tools.find((tool) => tool.name === 'slow_scan');
    assert.equal(scan?.execution?.taskSupport, 'optional');
    assert.ok(!('resultType' in (tools as unknown as Record<string, unknown>)));
    const echo = await alice.callTool({ name: 'quick_echo', arguments: { text: 'hi' } });
    assert.equal(textOf(echo as CallToolResult), 'hi');
    assert.equal((echo as Record<string, unknown>).resultType, undefined);
  });

  it('runs a 2026 task for callToolStream, with input on its tasks/result stream', async () => {
    let result: CallToolResult | undefined;
    for await (const message of alice.experimental.tasks.callToolStream({ name: 'ask_name', arguments: {} }, CallToolResultSchema, { task: { ttl: 60_000 } })) {
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') assert.fail(message.error.message);
    }
    assert.equal(textOf(result), 'Hello, Ada');
  });
});

describe('bridge: a 2025 client\'s polls of a 2026 backend\'s task are governed', () => {
  let stack: ModernBackendStack;
  let alice: Client;
  before(async () => {
    // A floor no test run outlasts: the second poll is early however slow the machine.
    stack = await startModernBackendStack({ tasks: { poll: { floor: '60s' } } });
    alice = await legacyClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('answers an early tasks/get from the snapshot without reaching the backend', async () => {
    const task = await createLegacyTask(alice, 'slow_scan', { seconds: 5 });
    assert.equal(task.pollInterval, 60_000, 'the floor is the interval told');
    await alice.experimental.tasks.getTask(task.taskId);
    const before = received(stack, 'tasks/get').length;
    const early = await alice.experimental.tasks.getTask(task.taskId);
    assert.equal(early.status, 'working');
    assert.equal(received(stack, 'tasks/get').length, before, 'the early poll stayed at the gateway');
  });
});
