// The real SDK 1.x client against the example MCP server, twice: directly (proof that the
// backend every other e2e test stands behind behaves as WIRE-NOTES describes) and through
// the gateway (proof that taskgate forwards all of it faithfully: JSON and SSE replies,
// 2025 tasks, mid-stream elicitation, GET-stream notifications, resumption, DELETE).
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type ElicitRequest,
  type LoggingMessageNotification,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import { startExampleServer, type ExampleServerOptions, type ExampleServerStats } from '../../examples/mcp-server/server.js';
import { startStack } from './harness.js';

type Via = 'direct' | 'gateway';

/** Where the client connects: the backend itself, or the gateway in front of it. */
interface Target {
  url: string;
  /** What the backend received, either way. */
  stats: ExampleServerStats;
  close(): Promise<void>;
}

async function startTarget(via: Via, options: ExampleServerOptions = {}): Promise<Target> {
  if (via === 'direct') return startExampleServer(options);
  const stack = await startStack({ server: options });
  return { url: stack.gw.url, stats: stack.servers[0]!.stats, close: () => stack.close() };
}

interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  elicitations: ElicitRequest[];
  logs: LoggingMessageNotification['params'][];
}

const openClients: Client[] = [];

async function connect(server: Target, answers: { name?: string; color?: string } = {}): Promise<Connected> {
  const client = new Client({ name: 'example-server-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const elicitations: ElicitRequest[] = [];
  const logs: LoggingMessageNotification['params'][] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicitations.push(request);
    const properties = 'requestedSchema' in request.params ? request.params.requestedSchema.properties : {};
    if ('name' in properties && answers.name) return { action: 'accept', content: { name: answers.name } };
    if ('color' in properties && answers.color) return { action: 'accept', content: { color: answers.color } };
    return { action: 'decline' };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
  });
  const transport = new StreamableHTTPClientTransport(new URL(server.url));
  await client.connect(transport);
  openClients.push(client);
  return { client, transport, elicitations, logs };
}

const textOf = (result: CallToolResult): string => (result.content[0]?.type === 'text' ? result.content[0].text : '');

async function eventually(check: () => boolean, what: string, ms = 3_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

afterEach(async () => {
  await Promise.allSettled(openClients.splice(0).map((c) => c.close()));
});

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
      await eventually(() => server.stats.requests.some((r) => r.method === 'GET' && r.sessionId === transport.sessionId), 'GET stream');
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
      await eventually(() => server.stats.aborted >= 1, 'the abort to reach the server');
    });
  });

  describe(`example MCP server options (${via})`, () => {
    it('resumes a POST stream from Last-Event-ID (eventStore: true)', async () => {
      const server = await startTarget(via, { eventStore: true });
      try {
        const { client, transport } = await connect(server);
        const sessionId = transport.sessionId!;
        const abort = new AbortController();
        const res = await fetch(server.url, {
          method: 'POST',
          headers: rawHeaders(sessionId),
          body: JSON.stringify(toolCall(41, 'notify_progress', { count: 4, delayMs: 100 })),
          signal: abort.signal,
        });
        const first = sseEvents(res);
        const priming = (await first.next()).value as EventSourceMessage;
        assert.equal(priming.data, '');
        const seen = (await first.next()).value as EventSourceMessage;
        assert.match(seen.data, /step 1 of 4/);
        abort.abort();
        await sleep(600); // the rest is sent while nobody listens, and kept by the event store

        const resumed = await fetch(server.url, {
          headers: { ...rawHeaders(sessionId), accept: 'text/event-stream', 'last-event-id': seen.id! },
          // A broken replay would otherwise wait on the stream forever.
          signal: AbortSignal.timeout(5_000),
        });
        assert.equal(resumed.status, 200);
        const replayed: string[] = [];
        for await (const event of sseEvents(resumed)) {
          replayed.push(event.data);
          if (event.data.includes('"id":41')) break;
        }
        assert.ok(!replayed.some((d) => d.includes('step 1 of 4')));
        assert.ok(replayed.some((d) => d.includes('step 4 of 4')));
        assert.match(replayed.at(-1)!, /sent 4 notifications/);
        await client.close();
      } finally {
        await server.close();
      }
    });

    it('replays standalone GET stream events missed while disconnected (eventStore: true)', async () => {
      const server = await startTarget(via, { eventStore: true });
      try {
        // A raw session, so no SDK client holds the GET stream open.
        const init = await fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 0,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
          }),
        });
        await init.body?.cancel();
        const sessionId = init.headers.get('mcp-session-id')!;
        const post = async (message: unknown): Promise<void> => {
          const res = await fetch(server.url, { method: 'POST', headers: rawHeaders(sessionId), body: JSON.stringify(message) });
          for await (const event of sseEvents(res)) void event;
        };
        await post({ jsonrpc: '2.0', method: 'notifications/initialized' });

        // The GET stream has no priming event: the cursor is the id of the last event received.
        const abort = new AbortController();
        const get = await fetch(server.url, { headers: { ...rawHeaders(sessionId), accept: 'text/event-stream' }, signal: abort.signal });
        await post(toolCall(1, 'ping_listeners', { text: 'first' }));
        const seen = (await sseEvents(get).next()).value as EventSourceMessage;
        assert.match(seen.data, /first/);
        abort.abort();
        await eventually(() => server.stats.aborted >= 1, 'the GET stream to close');
        await post(toolCall(2, 'ping_listeners', { text: 'while you were away' }));

        const resumed = await fetch(server.url, {
          headers: { ...rawHeaders(sessionId), accept: 'text/event-stream', 'last-event-id': seen.id! },
          // A broken replay would otherwise wait on the stream forever.
          signal: AbortSignal.timeout(5_000),
        });
        const replayed: string[] = [];
        for await (const event of sseEvents(resumed)) {
          replayed.push(event.data);
          if (event.data.includes('while you were away')) break;
        }
        // What followed `first` on the stream: its list_changed, then the missed message.
        assert.deepEqual(
          replayed.map((d) => (JSON.parse(d) as { method: string }).method),
          ['notifications/tools/list_changed', 'notifications/message'],
        );
      } finally {
        await server.close();
      }
    });

    it('answers with JSON instead of SSE (enableJsonResponse: true)', async () => {
      const server = await startTarget(via, { enableJsonResponse: true });
      try {
        const { client, transport } = await connect(server);
        const res = await fetch(server.url, {
          method: 'POST',
          headers: rawHeaders(transport.sessionId!),
          body: JSON.stringify(toolCall(3, 'echo', { text: 'json please' })),
        });
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
        const body = (await res.json()) as { id: number; result: CallToolResult };
        assert.equal(body.id, 3);
        assert.equal(textOf(body.result), 'json please');
        await client.close();
      } finally {
        await server.close();
      }
    });
  });

  function rawHeaders(sessionId: string): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
    };
  }

  function toolCall(id: number, name: string, args: Record<string, unknown>): unknown {
    return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
  }

  async function* sseEvents(res: Response): AsyncGenerator<EventSourceMessage> {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
  }
}
