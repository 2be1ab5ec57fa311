/**
 * Bridging, 2026-07-28 client → backend with only 2025-11-25 tasks: the ext-tasks client (over
 * @modelcontextprotocol/client 2.4.0, modern-client.ts) through the gateway against the SDK 1.x
 * example server (task tools slow_scan, ask_name, fail_task). The gateway holds a 2025 session
 * per principal and serves the task the 2026 way.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { isHandleShaped } from '../../src/tasks/handle.js';
import { generationSeen, startBridgeGateway, type BridgeStack } from './support/bridge-harness.js';
import { createModernTaskClient, type ModernTaskClient } from './support/modern-client.js';
import { listen } from './support/push-listener.js';
import { waitForModernStatus } from './support/task-waits.js';
import { freePort } from '../support/redis-servers.js';
import { waitFor, waitForValue } from '../support/wait.js';

function textOf(result: CallToolResult | Record<string, unknown> | undefined): string | undefined {
  const first = (result?.content as { type: string; text?: string }[] | undefined)?.[0];
  return first?.type === 'text' ? first.text : undefined;
}

describe('bridge: 2026-07-28 client, backend with 2025-11-25 tasks only', () => {
  let backend: ExampleServer;
  let stack: BridgeStack;
  const clients: ModernTaskClient[] = [];
  const client = async (subject: string): Promise<ModernTaskClient> => {
    const made = await createModernTaskClient(stack.gw.url, { headers: { authorization: await stack.bearer(subject) } });
    clients.push(made);
    return made;
  };
  const startTask = async (c: ModernTaskClient, name: string, args: Record<string, unknown> = {}): Promise<string> => {
    const execution = await c.callTool(name, args);
    assert.equal(execution.kind, 'task', `${name} did not create a task`);
    await execution.detach();
    return execution.handle!.taskId;
  };

  before(async () => {
    backend = await startExampleServer({ name: 'legacy-0' });
    stack = await startBridgeGateway([backend.url], { tasks: { ttl: { max: '30s' } } });
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await stack?.close();
    await backend?.close();
  });

  it('learns that the backend serves 2025 tasks only, and shows the extension in server/discover', async () => {
    assert.equal(await generationSeen(stack, backend.url), '2025-11-25');
    const alice = await client('alice');
    const discover = await alice.raw('server/discover', {});
    assert.equal(discover.status, 200);
    const result = discover.response?.result ?? {};
    assert.equal(result.resultType, 'complete');
    assert.deepEqual(result.supportedVersions, ['2026-07-28']);
    assert.deepEqual((result.capabilities as { extensions: Record<string, unknown> }).extensions['io.modelcontextprotocol/tasks'], {});
  });

  it('bridges plain traffic: tools/list and a plain tools/call in the principal\'s 2025 session', async () => {
    const alice = await client('alice');
    const list = await alice.raw('tools/list', {});
    const tools = (list.response?.result?.tools ?? []) as { name: string; execution?: unknown }[];
    assert.ok(tools.some((tool) => tool.name === 'slow_scan'));
    assert.ok(tools.every((tool) => tool.execution === undefined), 'no 2025 tool-level flag in a 2026 Tool');
    assert.equal(list.response?.result?.resultType, 'complete');
    const echo = await alice.raw('tools/call', { name: 'echo', arguments: { text: 'plain' } }, { envelope: 'plain' });
    assert.equal(echo.response?.result?.resultType, 'complete');
  });

  it('runs a 2025 task for ext-tasks: created under a handle, polled, result inline', async () => {
    const alice = await client('alice');
    const execution = await alice.callTool('slow_scan', { seconds: 0.5 });
    assert.equal(execution.kind, 'task');
    const created = alice.lastExchange().response?.result ?? {};
    assert.equal(created.resultType, 'task');
    assert.ok(isHandleShaped(created.taskId), `not a handle: ${String(created.taskId)}`);
    assert.equal(typeof created.ttlMs, 'number');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed');
    assert.match(textOf(outcome.status === 'completed' ? outcome.result : undefined) ?? '', /^scan complete/);
    const call = backend.stats.requests.find((r) => r.rpcMethod === 'tools/call' && (r.body as { params?: { name?: string } }).params?.name === 'slow_scan');
    assert.ok(call?.sessionId, 'sent in a 2025 session');
    assert.equal(typeof (call.body as { params: { task: { ttl: number } } }).params.task.ttl, 'number', 'as a 2025 task request');
    assert.ok(backend.stats.requests.some((r) => r.rpcMethod === 'tasks/get' && r.sessionId === call.sessionId), 'polled in the session that holds it');
    // The backend's own id and its session never reach the client, in any answer it got.
    const backendIds = new Set(backend.stats.requests.filter((r) => r.rpcMethod === 'tasks/get').map((r) => String((r.body as { params: { taskId: string } }).params.taskId)));
    assert.ok(backendIds.size > 0);
    const seen = JSON.stringify(alice.exchanges.map((e) => e.messages));
    for (const id of backendIds) assert.ok(!seen.includes(id), `the backend id ${id} reached the client`);
    assert.ok(!seen.includes(call.sessionId!), 'the backend session reached the client');
  });

  it('carries input: the 2025 question becomes inputRequests, tasks/update answers it', async () => {
    const alice = await client('alice');
    const taskId = await startTask(alice, 'ask_name');
    const parked = await waitForModernStatus(alice, taskId, 'input_required');
    const inputRequests = parked.raw.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>;
    const [key, ...others] = Object.keys(inputRequests);
    assert.deepEqual(others, []);
    assert.equal(inputRequests[key!]!.method, 'elicitation/create');
    assert.equal(inputRequests[key!]!.params.mode, 'form');
    await alice.updateTask(taskId, { [key!]: { action: 'accept', content: { name: 'Ada' } } });
    assert.equal(alice.lastExchange().response?.result?.resultType, 'complete');
    const done = await waitForModernStatus(alice, taskId, 'completed');
    assert.equal(textOf(done.raw.result as Record<string, unknown>), 'Hello, Ada');
  });

  it('a 2025 failed task with an isError result is a 2026 completed one with that result', async () => {
    const alice = await client('alice');
    const { outcome } = await (await alice.callTool('fail_task', { delayMs: 50, reason: 'disk full' })).settle();
    assert.equal(outcome.status, 'completed');
    assert.equal(outcome.status === 'completed' ? outcome.result.isError : undefined, true);
    assert.equal(textOf(outcome.status === 'completed' ? outcome.result : undefined), 'disk full');
  });

  it('cancels: acknowledged at once and passed on to the backend in the task\'s session', async () => {
    const alice = await client('alice');
    const taskId = await startTask(alice, 'slow_scan', { seconds: 30 });
    await alice.cancelTask(taskId);
    assert.equal(alice.lastExchange().response?.result?.resultType, 'complete');
    assert.ok(backend.stats.requests.some((r) => r.rpcMethod === 'tasks/cancel'));
    assert.equal((await waitForModernStatus(alice, taskId, 'cancelled')).status, 'cancelled');
  });

  it('another principal is refused like an unknown handle, and never shares a backend session', async () => {
    const alice = await client('alice');
    const bob = await client('bob');
    const taskId = await startTask(alice, 'slow_scan', { seconds: 5 });
    const foreign = await bob.raw('tasks/get', { taskId });
    const unknown = await bob.raw('tasks/get', { taskId: 'C'.repeat(32) });
    assert.equal(foreign.response?.error?.code, -32602);
    assert.deepEqual(foreign.response?.error, unknown.response?.error);
    assert.equal(foreign.status, unknown.status);
    const bobsTask = await startTask(bob, 'slow_scan', { seconds: 0.2 });
    const store = stack.gw.gateway.store;
    const [ofAlice, ofBob] = await Promise.all([store.getTask(taskId), store.getTask(bobsTask)]);
    assert.ok(ofAlice?.upstreamSession && ofBob?.upstreamSession);
    assert.notEqual(ofAlice.upstreamSession, ofBob.upstreamSession, 'each principal has a backend session of its own');
    await alice.cancelTask(taskId);
  });

  it('feeds a listener from the gateway\'s governed polls: the completion with its result inline', async () => {
    const alice = await client('alice');
    const taskId = await startTask(alice, 'slow_scan', { seconds: 0.6 });
    const listener = await listen(stack.gw.url, await stack.bearer('alice'), { taskIds: [taskId] });
    try {
      assert.equal(listener.status, 200);
      const done = await listener.waitFor((m) => m.method === 'notifications/tasks' && m.params?.taskId === taskId && m.params?.status === 'completed', 8000, 'completion');
      assert.match(JSON.stringify(done.params!.result), /scan complete/);
      assert.equal((done.params!.result as Record<string, unknown>).resultType, 'complete');
      await listener.waitFor((m) => 'result' in m, 4000, 'the listen response');
    } finally {
      listener.close();
    }
  });

  it('refuses a listen that names no task: a 2025-only backend has none to serve', async () => {
    const listener = await listen(stack.gw.url, await stack.bearer('alice'), { toolsListChanged: true });
    try {
      assert.equal(listener.status, 400);
      assert.equal((listener.body?.error as { code?: number } | undefined)?.code, -32602);
    } finally {
      listener.close();
    }
  });

  it('refuses what it does not carry with a clear error', async () => {
    const alice = await client('alice');
    const refused = await alice.raw('logging/setLevel', { level: 'info' });
    assert.equal(refused.status, 400);
    assert.equal(refused.response?.error?.code, -32602);
    assert.match(String((refused.response?.error?.data as { reason?: string } | undefined)?.reason), /no 2025-11-25 form/);
  });
});

describe('bridge: a 2026 client\'s task on a 2025 backend ends its lifetime', () => {
  let backend: ExampleServer;
  let stack: BridgeStack;
  let alice: ModernTaskClient;
  before(async () => {
    backend = await startExampleServer({ name: 'legacy-ttl' });
    stack = await startBridgeGateway([backend.url], { tasks: { ttl: { max: '1s', default: '1s' } } });
    alice = await createModernTaskClient(stack.gw.url, { headers: { authorization: await stack.bearer('alice') } });
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
    await backend?.close();
  });

  it('is forgotten at its capped TTL and cancelled in its 2025 session', async () => {
    const execution = await alice.callTool('slow_scan', { seconds: 30 });
    await execution.detach();
    const taskId = execution.handle!.taskId;
    const session = (await stack.gw.gateway.store.getTask(taskId))?.upstreamSession;
    assert.ok(session);
    const code = await waitForValue(async () => (await alice.raw('tasks/get', { taskId })).response?.error?.code, 'tasks/get to be refused', 10_000, 250);
    assert.equal(code, -32602);
    const cancel = () => backend.stats.requests.find((r) => r.rpcMethod === 'tasks/cancel');
    await waitFor(() => cancel() !== undefined, 'the backend to be told', 5000, 50);
    assert.equal(cancel()?.sessionId, session, 'the backend is told in the session that holds the task');
  });
});

describe('bridge: the backend loses the 2025 session', () => {
  let backend: ExampleServer;
  let stack: BridgeStack;
  let alice: ModernTaskClient;
  let port: number;
  before(async () => {
    port = await freePort();
    backend = await startExampleServer({ name: 'legacy-lost', port });
    stack = await startBridgeGateway([backend.url], {});
    alice = await createModernTaskClient(stack.gw.url, { headers: { authorization: await stack.bearer('alice') } });
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
    await backend?.close();
  });

  it('ends the task failed, saying so, and opens a new session for new work', async () => {
    const execution = await alice.callTool('slow_scan', { seconds: 30 });
    await execution.detach();
    const taskId = execution.handle!.taskId;
    // A restart: the new process knows none of the old sessions.
    await backend.close();
    backend = await startExampleServer({ name: 'legacy-lost-2', port });
    const lost = await waitForModernStatus(alice, taskId, 'failed');
    assert.equal(lost.statusMessage, 'the backend no longer knows this task');
    assert.equal((lost.raw.error as { code: number }).code, -32603);
    const again = await alice.callTool('slow_scan', { seconds: 0.2 });
    assert.equal(again.kind, 'task', 'a new session took the new task');
    const { outcome } = await again.settle();
    assert.equal(outcome.status, 'completed');
  });
});

describe('bridge: a 2026 client\'s polls of a 2025 backend\'s task are governed', () => {
  let backend: ExampleServer;
  let stack: BridgeStack;
  let alice: ModernTaskClient;
  before(async () => {
    backend = await startExampleServer({ name: 'legacy-polls' });
    // A floor no test run outlasts: the second poll is early however slow the machine.
    stack = await startBridgeGateway([backend.url], { tasks: { poll: { floor: '60s' } } });
    alice = await createModernTaskClient(stack.gw.url, { headers: { authorization: await stack.bearer('alice') } });
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
    await backend?.close();
  });

  it('answers an early tasks/get from the snapshot, never the backend', async () => {
    const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 5 } });
    const taskId = String(created.response?.result?.taskId);
    assert.equal(created.response?.result?.pollIntervalMs, 60_000, 'the floor is the interval told');
    const polls = () => backend.stats.requests.filter((r) => r.rpcMethod === 'tasks/get').length;
    const first = await alice.raw('tasks/get', { taskId });
    assert.equal(first.response?.result?.status, 'working');
    const before = polls();
    const early = await alice.raw('tasks/get', { taskId });
    assert.deepEqual(early.response?.result, first.response?.result, 'the same answer, from the snapshot');
    assert.equal(polls(), before, 'the early poll stayed at the gateway');
  });
});

describe('bridge: requests it leaves alone are balanced as without it', () => {
  let backends: ModernTaskServer[];
  let stack: BridgeStack;
  let alice: ModernTaskClient;
  before(async () => {
    backends = [await startModernTaskServer({ name: 'm-0' }), await startModernTaskServer({ name: 'm-1' })];
    stack = await startBridgeGateway(backends.map((b) => b.url), {});
    alice = await createModernTaskClient(stack.gw.url, { headers: { authorization: await stack.bearer('alice') } });
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
    await Promise.all(backends.map((b) => b.close()));
  });

  it('round-robins a 2026 client\'s tools/list over two 2026 instances', async () => {
    const ids = new Set<unknown>();
    for (let i = 0; i < 4; i++) {
      const exchange = await alice.raw('tools/list', {});
      assert.equal(exchange.status, 200);
      ids.add(exchange.request.body.id);
    }
    // Only these four: the client library may list tools of its own accord meanwhile.
    const mine = (b: ModernTaskServer) => b.stats.requests.filter((r) => r.rpcMethod === 'tools/list' && ids.has((r.body as { id?: unknown }).id)).length;
    assert.deepEqual(backends.map(mine), [2, 2]);
  });
});

describe('bridge: bridged task operations are audited', () => {
  let backend: ExampleServer;
  let stack: BridgeStack;
  let alice: ModernTaskClient;
  const audit: Record<string, unknown>[] = [];
  before(async () => {
    backend = await startExampleServer({ name: 'legacy-audit' });
    const auditDestination = { write: (line: string) => void audit.push(JSON.parse(line) as Record<string, unknown>) };
    stack = await startBridgeGateway([backend.url], { gatewayDeps: { auditDestination } });
    alice = await createModernTaskClient(stack.gw.url, { headers: { authorization: await stack.bearer('alice') } });
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
    await backend?.close();
  });

  it('records the creation, the polls and the cancel with the principal, and a foreign lookup as denied', async () => {
    const execution = await alice.callTool('slow_scan', { seconds: 30 });
    await execution.detach();
    const taskId = execution.handle!.taskId;
    await alice.raw('tasks/get', { taskId });
    await alice.cancelTask(taskId);
    const mallory = await createModernTaskClient(stack.gw.url, { headers: { authorization: await stack.bearer('mallory') } });
    try {
      await mallory.raw('tasks/get', { taskId });
    } finally {
      await mallory.close();
    }
    const of = (event: string) => audit.filter((e) => e.event === event && e.handle === taskId);
    const created = of('created')[0];
    assert.equal(created?.tool, 'slow_scan');
    assert.equal((created?.principal as { subject?: string } | undefined)?.subject, 'alice');
    assert.ok(of('get').length >= 1);
    assert.equal(of('cancel').length, 1);
    const denied = of('denied')[0];
    assert.equal((denied?.principal as { subject?: string } | undefined)?.subject, 'mallory');
    assert.equal(denied?.reason, 'denied');
  });
});
