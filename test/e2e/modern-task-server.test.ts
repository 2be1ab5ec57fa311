// The modern task server driven directly by real clients: @modelcontextprotocol/client 2.4.0 under
// @modelcontextprotocol/ext-tasks 0.2.2, plus raw fetch for the exact wire. These are the flows the
// gateway tests later replay through taskgate with the same client (modern-client.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { JsonRpcResponseError } from '@modelcontextprotocol/ext-tasks/client';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { TASKS_EXTENSION, createModernTaskClient, type ModernTaskClient } from './support/modern-client.js';
import { waitForModernStatus } from './support/task-waits.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function textOf(result: CallToolResult | Record<string, unknown> | undefined): string | undefined {
  const first = (result?.content as { type: string; text?: string }[] | undefined)?.[0];
  return first?.type === 'text' ? first.text : undefined;
}

/** Starts a task and takes it away from ext-tasks' background driver, so the test steers it. */
async function startTask(client: ModernTaskClient, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const execution = await client.callTool(name, args);
  assert.equal(execution.kind, 'task', `${name} did not create a task`);
  await execution.detach();
  return execution.handle.taskId;
}

function isRpcError(code: number): (error: unknown) => boolean {
  return (error) => error instanceof JsonRpcResponseError && error.code === code;
}

describe('modern task server, driven by real clients', () => {
  let server: ModernTaskServer;
  let client: ModernTaskClient;

  before(async () => {
    server = await startModernTaskServer({ pollIntervalMs: 50, workMs: 50 });
    client = await createModernTaskClient(server.url);
  });
  after(async () => {
    await client.close();
    await server.close();
  });

  it('creates a slow_scan task and polls it to completion, result inlined', async () => {
    const execution = await client.callTool('slow_scan', { seconds: 0.2 });
    assert.equal(execution.kind, 'task');
    const created = client.lastExchange().response?.result ?? {};
    assert.equal(created.resultType, 'task');
    assert.match(String(created.taskId), UUID);
    assert.equal(created.status, 'working');
    for (const absent of ['content', 'result', 'error', 'inputRequests', 'task']) assert.ok(!(absent in created), absent);

    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed');
    assert.equal(textOf(outcome.status === 'completed' ? outcome.result : undefined), 'Scan finished after 0.2s');
    const last = client.lastExchange().response?.result ?? {};
    assert.equal(last.status, 'completed');
    assert.equal((last.result as Record<string, unknown>).resultType, 'complete');
    const polls = server.stats.requests.filter((r) => r.rpcMethod === 'tasks/get' && r.headers['mcp-name'] === created.taskId);
    assert.ok(polls.length >= 1, 'tasks/get carried Mcp-Name = taskId');
  });

  it('reports a JSON-RPC failure as a failed task with its error', async () => {
    const execution = await client.callTool('fail_task');
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.status === 'failed' ? outcome.error.code : undefined, -32603);
    const view = await client.getTask(execution.handle!.taskId);
    assert.equal(view.status, 'failed');
    assert.deepEqual(view.raw.error, { code: -32603, message: 'Simulated failure: upstream API rate limit exceeded' });
    assert.match(view.statusMessage ?? '', /^Tool execution failed/);
    assert.ok(!('result' in view.raw));
  });

  it('reports a tool error as a completed task whose result has isError', async () => {
    const { outcome } = await (await client.callTool('tool_error')).settle();
    assert.equal(outcome.status, 'completed');
    assert.equal(outcome.status === 'completed' ? outcome.result.isError : undefined, true);
  });

  it('parks ask_name in input_required until tasks/update answers it', async () => {
    const taskId = await startTask(client, 'ask_name');
    const parked = await waitForModernStatus(client, taskId, 'input_required');
    const inputRequests = parked.raw.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>;
    const [key, ...others] = Object.keys(inputRequests);
    assert.deepEqual(others, []);
    assert.match(key!, /^name-/);
    assert.equal(inputRequests[key!]!.method, 'elicitation/create');
    assert.equal(inputRequests[key!]!.params.mode, 'form');

    await client.updateTask(taskId, { [key!]: { action: 'accept', content: { name: 'Ada' } } });
    const ack = client.lastExchange();
    assert.equal(ack.status, 200);
    assert.equal(ack.response?.result?.resultType, 'complete');
    assert.ok(!('status' in (ack.response?.result ?? {})));

    const done = await waitForModernStatus(client, taskId, 'completed');
    assert.equal(textOf(done.raw.result as Record<string, unknown>), 'Hello, Ada');
  });

  it('lets ext-tasks answer inputRequests itself through onInputRequest', async () => {
    const answering = await createModernTaskClient(server.url, {
      onInputRequest: async () => ({ action: 'accept', content: { name: 'Grace' } }) as never,
    });
    try {
      const { outcome } = await (await answering.callTool('ask_name')).settle();
      assert.equal(textOf(outcome.status === 'completed' ? outcome.result : undefined), 'Hello, Grace');
      assert.ok(answering.exchanges.some((e) => e.request.body.method === 'tasks/update'));
    } finally {
      await answering.close();
    }
  });

  it('acks a cancel, settles cancelled, and acks a second cancel the same way', async () => {
    const taskId = await startTask(client, 'slow_scan', { seconds: 30 });
    await client.cancelTask(taskId);
    const first = client.lastExchange();
    await waitForModernStatus(client, taskId, 'cancelled');
    await client.cancelTask(taskId);
    const second = client.lastExchange();
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    assert.deepEqual(second.response?.result, first.response?.result);
    assert.equal(first.response?.result?.resultType, 'complete');
  });

  it('answers an unknown task with -32602 on HTTP 200', async () => {
    await assert.rejects(client.getTask('no-such-task'), isRpcError(-32602));
    assert.equal(client.lastExchange().status, 200);
    await assert.rejects(client.updateTask('no-such-task', {}), isRpcError(-32602));
    await assert.rejects(client.cancelTask('no-such-task'), isRpcError(-32602));
  });

  it('answers the removed tasks/result and tasks/list with -32601 on HTTP 404', async () => {
    const taskId = await startTask(client, 'slow_scan', { seconds: 0 });
    for (const [method, params] of [['tasks/result', { taskId }], ['tasks/list', {}]] as const) {
      const exchange = await client.raw(method, params);
      assert.equal(exchange.status, 404, method);
      assert.equal(exchange.response?.error?.code, -32601, method);
    }
  });

  it('runs a non-declaring request synchronously, or answers -32021 for a task-only tool', async () => {
    const before = server.tasks.count();
    const sync = await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 0.05 } }, { envelope: 'plain' });
    assert.equal(sync.status, 200);
    assert.equal(sync.response?.result?.resultType, 'complete');
    assert.equal(textOf(sync.response?.result), 'Scan finished after 0.05s');
    assert.equal(server.tasks.count(), before);

    const required = await client.raw('tools/call', { name: 'requires_task', arguments: {} }, { envelope: 'plain' });
    assert.equal(required.status, 400);
    assert.equal(required.response?.error?.code, -32021);
    assert.deepEqual(required.response?.error?.data, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });

    const poll = await client.raw('tasks/get', { taskId: 'whatever' }, { envelope: 'plain' });
    assert.equal(poll.status, 400);
    assert.equal(poll.response?.error?.code, -32021);
  });

  it('asks a non-declaring caller for input through MRTR instead of a task', async () => {
    const meta = { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
    const first = await client.raw('tools/call', { name: 'ask_name', arguments: {}, _meta: meta }, { envelope: 'plain' });
    assert.equal(first.response?.result?.resultType, 'input_required');
    assert.deepEqual(Object.keys(first.response?.result?.inputRequests as object), ['name']);
    const retry = await client.raw(
      'tools/call',
      { name: 'ask_name', arguments: {}, inputResponses: { name: { action: 'accept', content: { name: 'Lin' } } }, _meta: meta },
      { envelope: 'plain' },
    );
    assert.equal(textOf(retry.response?.result), 'Hello, Lin');
  });

  it('advertises a poll interval that can change while the task runs', async () => {
    const taskId = await startTask(client, 'slow_scan', { seconds: 30 });
    assert.equal((await client.getTask(taskId)).suggestedPollIntervalMs, 50);
    server.tasks.setPollInterval(taskId, 700);
    assert.equal((await client.getTask(taskId)).suggestedPollIntervalMs, 700);
    await client.cancelTask(taskId);
  });

  it('forgets a task once its ttlMs has passed', async () => {
    const shortLived = await startModernTaskServer({ defaultTtlMs: 200, pollIntervalMs: 50 });
    const local = await createModernTaskClient(shortLived.url);
    try {
      const taskId = await startTask(local, 'slow_scan', { seconds: 0 });
      assert.equal(local.lastExchange().response?.result?.ttlMs, 200);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await assert.rejects(local.getTask(taskId), isRpcError(-32602));
      assert.equal(shortLived.tasks.count(), 0);
    } finally {
      await local.close();
      await shortLived.close();
    }
  });
});

describe('modern task server, exact wire', () => {
  let server: ModernTaskServer;
  let client: ModernTaskClient;

  before(async () => {
    server = await startModernTaskServer({ pollIntervalMs: 50, workMs: 50 });
    client = await createModernTaskClient(server.url, { headers: { Authorization: 'Bearer wire-test' } });
  });
  after(async () => {
    await client.close();
    await server.close();
  });

  it('declares the extension in server/discover', async () => {
    const discover = await client.raw('server/discover', {}, { envelope: 'plain' });
    assert.equal(discover.status, 200);
    assert.match(discover.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual((discover.response?.result?.capabilities as Record<string, unknown>).extensions, { [TASKS_EXTENSION]: {} });
  });

  it('returns a flat CreateTaskResult with exactly the Task fields', async () => {
    const created = await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
    assert.equal(created.status, 200);
    const result = created.response?.result ?? {};
    assert.deepEqual(Object.keys(result).sort(), ['_meta', 'createdAt', 'lastUpdatedAt', 'pollIntervalMs', 'resultType', 'status', 'taskId', 'ttlMs']);
    assert.equal(result.ttlMs, 600_000);
    assert.equal(result.pollIntervalMs, 50);
    await client.raw('tasks/cancel', { taskId: result.taskId });
  });

  it('checks Mcp-Name against params.taskId on tasks/*', async () => {
    const created = await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
    const taskId = String(created.response?.result?.taskId);
    const missing = await client.raw('tasks/get', { taskId }, { omitHeaders: ['Mcp-Name'] });
    assert.equal(missing.status, 400);
    assert.equal(missing.response?.error?.code, -32020);
    const mismatched = await client.raw('tasks/get', { taskId }, { headers: { 'Mcp-Name': 'some-other-task' } });
    assert.equal(mismatched.status, 400);
    assert.equal(mismatched.response?.error?.code, -32020);
    const encoded = `=?base64?${Buffer.from(taskId).toString('base64')}?=`;
    const sentinel = await client.raw('tasks/get', { taskId }, { headers: { 'Mcp-Name': encoded } });
    assert.equal(sentinel.status, 200);
    assert.equal(sentinel.response?.result?.taskId, taskId);
    const cancel = await client.raw('tasks/cancel', { taskId });
    assert.equal(cancel.status, 200);
    const seen = server.stats.requests.filter((r) => r.rpcMethod === 'tasks/cancel').at(-1);
    assert.equal(seen?.headers['mcp-name'], taskId);
    assert.equal(seen?.headers.authorization, 'Bearer wire-test');
  });

  it('rejects a tasks/* request without the _meta envelope with -32602 on HTTP 400', async () => {
    const bare = await client.raw('tasks/get', { taskId: 'anything' }, { envelope: 'none' });
    assert.equal(bare.status, 400);
    assert.equal(bare.response?.error?.code, -32602);
  });

  it('refuses GET (no streams on this revision) and initialize (legacy era)', async () => {
    const get = await fetch(server.url, { headers: { accept: 'text/event-stream' } });
    await get.body?.cancel();
    assert.equal(get.status, 405);
    const init = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'legacy', version: '1' } },
      }),
    });
    assert.equal(init.status, 400);
    assert.equal(((await init.json()) as { error: { code: number } }).error.code, -32022);
  });
});
