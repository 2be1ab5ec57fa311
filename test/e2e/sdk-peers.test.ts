// The real SDK 1.x client against the example MCP server, twice: directly (proof that the
// backend every other e2e test stands behind behaves as WIRE-NOTES describes) and through
// the gateway (proof that taskgate forwards all of it faithfully: JSON and SSE replies,
// 2025 tasks, mid-stream elicitation, GET-stream notifications, resumption, DELETE).
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { CallToolResultSchema, CreateTaskResultSchema, McpError, RELATED_TASK_META_KEY, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { type Target, startTarget, connect, textOf, closeOpenClients, rawHeaders, toolCall } from './support/sdk-peer-clients.js';
import { waitFor } from '../support/wait.js';

afterEach(closeOpenClients);

for (const via of ['direct', 'gateway'] as const) {
  describe(`example MCP server with the SDK 1.x client (${via})`, () => {
    let server: Target;
    before(async () => {
      server = await startTarget(via, { name: 'example-e2e' });
    });
    after(async () => {
      await server.close();
    });

    it('initializes and lists its tools with their task support', async () => {
      const { client } = await connect(server);
      assert.equal(client.getServerVersion()?.name, 'example-e2e');
      assert.deepEqual(client.getServerCapabilities()?.tasks?.requests, { tools: { call: {} } });
      const { tools } = await client.listTools();
      const support = new Map(tools.map((t) => [t.name, t.execution?.taskSupport]));
      for (const name of ['echo', 'elicit_color', 'notify_progress', 'ping_listeners', 'test_simple_text']) {
        assert.ok(support.has(name), name);
      }
      assert.equal(support.get('slow_scan'), 'optional');
      assert.equal(support.get('ask_name'), 'required');
      assert.equal(support.get('fail_task'), 'optional');
    });

    it('echoes', async () => {
      const { client } = await connect(server);
      const result = (await client.callTool({ name: 'echo', arguments: { text: 'hi there' } })) as CallToolResult;
      assert.equal(textOf(result), 'hi there');
    });

    it('runs slow_scan as a task through callToolStream', async () => {
      const { client } = await connect(server);
      const kinds: string[] = [];
      let result: CallToolResult | undefined;
      const stream = client.experimental.tasks.callToolStream(
        { name: 'slow_scan', arguments: { seconds: 0.5 } },
        CallToolResultSchema,
        { task: { ttl: 60_000 } },
      );
      for await (const message of stream) {
        kinds.push(message.type);
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') assert.fail(message.error.message);
      }
      assert.equal(kinds[0], 'taskCreated');
      assert.ok(kinds.includes('taskStatus'));
      assert.match(textOf(result!), /^scan complete/);
    });

    it('polls slow_scan with getTask and fetches the result with getTaskResult', async () => {
      const { client } = await connect(server);
      const created = await client.request(
        { method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 0.4 }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
      );
      const { taskId } = created.task;
      assert.equal(created.task.status, 'working');
      let task = await client.experimental.tasks.getTask(taskId);
      while (task.status === 'working') {
        await sleep(task.pollInterval ?? 100);
        task = await client.experimental.tasks.getTask(taskId);
      }
      assert.equal(task.status, 'completed');
      const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      assert.match(textOf(result), /^scan complete/);
      assert.deepEqual(result._meta?.[RELATED_TASK_META_KEY], { taskId });
    });

    it('cancels slow_scan; a second cancel is -32602', async () => {
      const { client } = await connect(server);
      const created = await client.request(
        { method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
      );
      const { taskId } = created.task;
      const cancelled = await client.experimental.tasks.cancelTask(taskId);
      assert.equal(cancelled.status, 'cancelled');
      await sleep(300); // longer than one scan step: the work must have seen the cancel and stopped
      assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'cancelled');
      await assert.rejects(client.experimental.tasks.cancelTask(taskId), (e: unknown) => e instanceof McpError && e.code === -32602);
    });

    it('ends fail_task failed with an isError result', async () => {
      const { client } = await connect(server);
      const created = await client.request(
        { method: 'tools/call', params: { name: 'fail_task', arguments: { delayMs: 50, reason: 'disk on fire' }, task: {} } },
        CreateTaskResultSchema,
      );
      const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      assert.equal(result.isError, true);
      assert.equal(textOf(result), 'disk on fire');
      assert.equal((await client.experimental.tasks.getTask(created.task.taskId)).status, 'failed');
    });

    it('asks for a name on the tasks/result stream (ask_name)', async () => {
      const { client, elicitations } = await connect(server, { name: 'Ada' });
      server.stats.reset();
      const statuses: string[] = [];
      let taskId = '';
      let result: CallToolResult | undefined;
      const stream = client.experimental.tasks.callToolStream({ name: 'ask_name', arguments: {} }, CallToolResultSchema, {
        task: { ttl: 60_000 },
      });
      for await (const message of stream) {
        if (message.type === 'taskCreated') taskId = message.task.taskId;
        if (message.type === 'taskStatus') statuses.push(message.task.status);
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') assert.fail(message.error.message);
      }
      assert.equal(textOf(result!), 'Hello, Ada');
      assert.ok(statuses.includes('input_required'), statuses.join());
      assert.equal(elicitations.length, 1);
      assert.deepEqual(elicitations[0]?.params._meta?.[RELATED_TASK_META_KEY], { taskId });
      // The answer can only follow the question, and the question only comes on tasks/result.
      const rpc = server.stats.requests.map((r) => r.rpcMethod ?? (r.method === 'POST' ? 'response' : r.method));
      assert.ok(rpc.indexOf('tasks/result') >= 0 && rpc.indexOf('tasks/result') < rpc.indexOf('response'), rpc.join());
    });

    it('elicits in the middle of a plain tools/call (elicit_color)', async () => {
      const { client, elicitations } = await connect(server, { color: 'teal' });
      const result = (await client.callTool({ name: 'elicit_color', arguments: {} })) as CallToolResult;
      assert.equal(textOf(result), 'Colour: teal');
      assert.equal(elicitations.length, 1);
    });

    it('sends progress and log notifications on the POST stream (notify_progress)', async () => {
      const { client, logs } = await connect(server);
      const progress: Progress[] = [];
      await client.callTool({ name: 'notify_progress', arguments: { count: 3, delayMs: 5 } }, undefined, {
        onprogress: (p) => progress.push(p),
      });
      assert.deepEqual(progress.map((p) => p.progress), [1, 2, 3]);
      assert.equal(logs.filter((l) => l.logger === 'notify_progress').length, 3);
    });

    it('sends ping_listeners notifications on the GET stream', async () => {
      const { client, transport, logs } = await connect(server);
      await waitFor(() => server.stats.requests.some((r) => r.method === 'GET' && r.sessionId === transport.sessionId), 'GET stream');
      // The GET request is recorded before the transport registers its stream: retry until it has.
      for (let i = 0; i < 50 && !logs.some((l) => l.logger === 'ping_listeners'); i++) {
        await client.callTool({ name: 'ping_listeners', arguments: { text: 'hello listeners' } });
        await sleep(50);
      }
      assert.equal(logs.find((l) => l.logger === 'ping_listeners')?.data, 'hello listeners');
    });

    it('records every request, and DELETE ends the session', async () => {
      server.stats.reset();
      const { client, transport } = await connect(server);
      const sessionId = transport.sessionId;
      await client.callTool({ name: 'echo', arguments: { text: 'recorded' } });
      await transport.terminateSession();
      const [first] = server.stats.requests;
      assert.equal(first?.rpcMethod, 'initialize');
      assert.equal(first?.sessionId, undefined);
      const call = server.stats.requests.find((r) => r.rpcMethod === 'tools/call');
      assert.equal(call?.sessionId, sessionId);
      assert.deepEqual((call?.body as { params: unknown }).params, { name: 'echo', arguments: { text: 'recorded' } });
      assert.ok(server.stats.requests.some((r) => r.method === 'DELETE' && r.sessionId === sessionId));
      const after = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId! },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      await after.body?.cancel();
      assert.equal(after.status, 404);
    });

    it('counts a client that goes away mid-stream in stats.aborted', async () => {
      const { transport } = await connect(server);
      server.stats.reset();
      const abort = new AbortController();
      const res = await fetch(server.url, {
        method: 'POST',
        headers: rawHeaders(transport.sessionId!),
        body: JSON.stringify(toolCall(7, 'notify_progress', { count: 20, delayMs: 50 })),
        signal: abort.signal,
      });
      await res.body!.getReader().read();
      abort.abort();
      await waitFor(() => server.stats.aborted >= 1, 'the abort to reach the server');
    });
  });
}
