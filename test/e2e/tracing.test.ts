/**
 * OpenTelemetry traces, end to end: the real OTLP/HTTP exporter ships the gateway's spans to a
 * collector on loopback, which decodes them with the official OTLP protobuf definitions
 * (otlp-receiver.ts). A real SDK 1.x client drives a real SDK 1.x task server through the
 * gateway; the spans of a created, polled (forwarded, then cached) and cancelled task are
 * checked, and so is the trace context the backend received, in its headers and in `_meta`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RecordedRequest } from '../../examples/mcp-server/server.js';
import { createHandleHasher } from '../../src/observability/handle-hash.js';
import { startOtlpReceiver, SPAN_KIND, STATUS_CODE, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { waitFor } from '../support/wait.js';

const SALT = 'tracing-test-salt-0123456789';
// What the client sends: one context in the HTTP headers, another in a request's _meta.
const HEADER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const HEADER_SPAN = 'b7ad6b7169203331';
const HEADER_STATE = 'congo=t61rcWkgMzE';
const META_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const META_SPAN = '00f067aa0ba902b7';

async function tracedClient(stack: TaskStack, subject: string, headers: Record<string, string>): Promise<{ client: Client; token: string }> {
  const token = await stack.bearer(subject);
  const client = new Client({ name: `client-${subject}`, version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.gw.url), { requestInit: { headers: { authorization: token, ...headers } } }));
  return { client, token };
}

function backendCalls(stack: TaskStack, rpcMethod: string): RecordedRequest[] {
  return (stack.backends[0]!.stats.requests as RecordedRequest[]).filter((r) => r.rpcMethod === rpcMethod);
}

function metaOf(request: RecordedRequest | undefined): Record<string, unknown> | undefined {
  return (request?.body as { params?: { _meta?: Record<string, unknown> } } | undefined)?.params?._meta;
}

function one(spans: ReceivedSpan[], what: string, test: (span: ReceivedSpan) => boolean): ReceivedSpan {
  const found = spans.filter(test);
  assert.equal(found.length, 1, `${what}: expected one span, got ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  return found[0]!;
}

const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId);
const traceparentOf = (span: ReceivedSpan) => `00-${span.traceId}-${span.spanId}-01`;

describe('OpenTelemetry traces through the gateway', () => {
  let receiver: OtlpReceiver;
  let stack: TaskStack;
  let alice: Client;
  let token: string;
  const hashHandle = createHandleHasher(SALT);

  before(async () => {
    receiver = await startOtlpReceiver();
    stack = await startTaskStack({
      era: 'legacy',
      // A one-minute floor makes the second of two back-to-back polls early, so it is cached.
      tasks: { poll: { floor: '1m' }, tools: { ask_name: { maxTtl: '1s' } } },
      policy: {
        audit: { stdout: false, handleHashSalt: SALT },
        tracing: { mode: 'otlp', endpoint: receiver.endpoint, serviceName: 'taskgate-test' },
      },
    });
    ({ client: alice, token } = await tracedClient(stack, 'alice', { traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01`, tracestate: HEADER_STATE }));
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
    await receiver?.close();
  });

  it('records a created, polled (forwarded and cached) and cancelled task, and the backend joins the trace', async () => {
    const created = await alice.request(
      {
        method: 'tools/call',
        params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 60_000 }, _meta: { traceparent: `00-${META_TRACE}-${META_SPAN}-01` } },
      },
      CreateTaskResultSchema,
    );
    const handle = created.task.taskId;
    assert.equal((await alice.experimental.tasks.getTask(handle)).status, 'working');
    assert.equal((await alice.experimental.tasks.getTask(handle)).status, 'working');
    assert.equal((await alice.experimental.tasks.cancelTask(handle)).status, 'cancelled');
    await stack.gw.gateway.policy.tracing!.flush();
    const spans = receiver.spans;
    assert.ok(receiver.contentTypes.every((type) => type === 'application/x-protobuf'), receiver.contentTypes.join());
    assert.ok(spans.every((s) => s.serviceName === 'taskgate-test' && s.scope === 'taskgate'));

    // Creation: the _meta context is the parent, the header's is linked.
    const createServer = one(spans, 'creation server span', (s) => s.kind === SPAN_KIND.SERVER && s.name === 'tools/call slow_scan');
    assert.equal(createServer.traceId, META_TRACE);
    assert.equal(createServer.parentSpanId, META_SPAN);
    assert.deepEqual(
      createServer.links.map((l) => [l.traceId, l.spanId, l.attributes['taskgate.link']]),
      [[HEADER_TRACE, HEADER_SPAN, 'http_parent']],
    );
    const sessionId = backendCalls(stack, 'tools/call')[0]?.sessionId;
    assert.ok(sessionId);
    assert.deepEqual(
      {
        method: createServer.attributes['mcp.method.name'],
        tool: createServer.attributes['gen_ai.tool.name'],
        operation: createServer.attributes['gen_ai.operation.name'],
        version: createServer.attributes['mcp.protocol.version'],
        session: typeof createServer.attributes['mcp.session.id'],
        requestId: typeof createServer.attributes['jsonrpc.request.id'],
        httpStatus: createServer.attributes['http.response.status_code'],
        route: createServer.attributes['http.route'],
        upstream: createServer.attributes['taskgate.upstream'],
        created: createServer.attributes['taskgate.task.created'],
        status: createServer.attributes['taskgate.task.status'],
        handle: createServer.attributes['taskgate.task.handle_hash'],
        taskTool: createServer.attributes['taskgate.task.tool'],
      },
      {
        method: 'tools/call',
        tool: 'slow_scan',
        operation: 'execute_tool',
        version: '2025-11-25',
        session: 'string',
        requestId: 'string',
        httpStatus: 200,
        route: '/mcp',
        upstream: 'tools',
        created: true,
        status: 'working',
        handle: hashHandle(handle),
        taskTool: 'slow_scan',
      },
    );
    assert.equal(createServer.status.code, STATUS_CODE.UNSET);
    const [createCall, ...moreCreateCalls] = childrenOf(spans, createServer);
    assert.equal(moreCreateCalls.length, 0);
    assert.equal(createCall!.kind, SPAN_KIND.CLIENT);
    assert.equal(createCall!.name, 'tools/call slow_scan');
    assert.equal(createCall!.attributes['server.address'], '127.0.0.1');
    assert.equal(createCall!.attributes['http.response.status_code'], 200);
    // The backend got the gateway's client span as its parent, in the header and in _meta.
    const backendCreate = backendCalls(stack, 'tools/call').at(-1)!;
    assert.equal(backendCreate.headers.traceparent, traceparentOf(createCall!));
    assert.equal(metaOf(backendCreate)?.traceparent, traceparentOf(createCall!));
    assert.equal(backendCreate.headers.tracestate, undefined, 'the header tracestate belongs to the other context');

    // Polls carry the header context; the first is forwarded, the second answered from the cache.
    const polls = spans.filter((s) => s.kind === SPAN_KIND.SERVER && s.name === 'tasks/get');
    assert.deepEqual(polls.map((s) => s.attributes['taskgate.task.poll_outcome']), ['forwarded', 'cached']);
    for (const poll of polls) {
      assert.equal(poll.traceId, HEADER_TRACE);
      assert.equal(poll.parentSpanId, HEADER_SPAN);
      assert.equal(poll.attributes['taskgate.task.handle_hash'], hashHandle(handle));
      assert.equal(poll.attributes['taskgate.task.status'], 'working');
      assert.equal(poll.attributes['taskgate.task.outcome'], 'allowed');
    }
    const [forwardedCall, ...morePollCalls] = childrenOf(spans, polls[0]!);
    assert.equal(morePollCalls.length, 0);
    assert.equal(forwardedCall!.name, 'tasks/get');
    assert.equal(forwardedCall!.attributes['taskgate.task.handle_hash'], hashHandle(handle));
    assert.deepEqual(childrenOf(spans, polls[1]!), [], 'a cached poll makes no upstream call');
    const backendPoll = backendCalls(stack, 'tasks/get').at(-1)!;
    assert.equal(backendPoll.headers.traceparent, traceparentOf(forwardedCall!));
    assert.equal(backendPoll.headers.tracestate, HEADER_STATE, 'tracestate travels with its trace');
    assert.equal(metaOf(backendPoll)?.traceparent, traceparentOf(forwardedCall!));
    assert.equal(metaOf(backendPoll)?.tracestate, HEADER_STATE);

    // Cancel: the task's end status, and the backend joins the trace.
    const cancel = one(spans, 'cancel server span', (s) => s.kind === SPAN_KIND.SERVER && s.name === 'tasks/cancel');
    assert.equal(cancel.attributes['taskgate.task.status'], 'cancelled');
    const [cancelCall] = childrenOf(spans, cancel);
    assert.equal(cancelCall?.kind, SPAN_KIND.CLIENT);
    assert.equal(backendCalls(stack, 'tasks/cancel').at(-1)!.headers.traceparent, traceparentOf(cancelCall!));

    // Never a token, never a raw handle, anywhere in any span.
    for (const span of spans) {
      for (const value of [...Object.values(span.attributes), ...span.links.flatMap((l) => Object.values(l.attributes)), span.status.message, span.name]) {
        if (typeof value !== 'string') continue;
        assert.ok(!value.includes(handle), `${span.name} carries the raw handle`);
        assert.ok(!value.includes(token.slice('Bearer '.length)), `${span.name} carries the token`);
      }
    }
  });

  it('records a refused poll with the error the client got', async () => {
    await alice.experimental.tasks.getTask('not-a-handle-of-alice').catch(() => undefined);
    await stack.gw.gateway.policy.tracing!.flush();
    const refused = receiver.spans.filter((s) => s.kind === SPAN_KIND.SERVER && s.name === 'tasks/get' && s.attributes['taskgate.task.outcome'] === 'not_found');
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.status.code, STATUS_CODE.ERROR);
    assert.equal(refused[0]!.attributes['rpc.response.status_code'], '-32602');
    assert.equal(refused[0]!.attributes['taskgate.error.code'], 'TG_ERR_TASK_NOT_FOUND');
  });

  it('links the cancel of an expired task, a call the gateway makes itself, to the creating request', async () => {
    const created = await alice.request({ method: 'tools/call', params: { name: 'ask_name', arguments: {}, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    assert.equal(created.task.ttl, 1000);
    // The expiry sweep runs every second; wait (bounded) for its cancel's span to be exported.
    const isExpiryCancel = (s: ReceivedSpan) => s.kind === SPAN_KIND.CLIENT && s.attributes['taskgate.call.reason'] === 'expired';
    await waitFor(
      async () => {
        await stack.gw.gateway.policy.tracing!.flush();
        return receiver.spans.some(isExpiryCancel);
      },
      'the expiry cancel\'s span',
      10_000,
      100,
    );
    const spans = receiver.spans;
    const creation = one(spans, 'ask_name creation', (s) => s.kind === SPAN_KIND.SERVER && s.name === 'tools/call ask_name');
    const expiryCancel = one(spans, 'expiry cancel', isExpiryCancel);
    assert.equal(expiryCancel.name, 'tasks/cancel');
    assert.equal(expiryCancel.traceId, creation.traceId, 'the task\'s whole life is one trace');
    assert.equal(expiryCancel.parentSpanId, creation.spanId);
    assert.deepEqual(expiryCancel.links.map((l) => [l.spanId, l.attributes['taskgate.link']]), [[creation.spanId, 'task_creation']]);
    assert.equal(expiryCancel.attributes['taskgate.task.handle_hash'], hashHandle(created.task.taskId));
    assert.equal(expiryCancel.attributes['taskgate.task.tool'], 'ask_name');
    const backendCancel = backendCalls(stack, 'tasks/cancel').at(-1)!;
    assert.equal(backendCancel.headers.traceparent, traceparentOf(expiryCancel));
    assert.equal(metaOf(backendCancel)?.traceparent, traceparentOf(expiryCancel));
  });
});

describe('OpenTelemetry traces of a 2026-07-28 exchange', () => {
  it('has no session, keeps the request envelope, and records a tool error', async () => {
    const receiver = await startOtlpReceiver();
    const stack = await startTaskStack({ era: 'modern', policy: { audit: { stdout: false }, tracing: { mode: 'otlp', endpoint: receiver.endpoint } } });
    const client = await modernClient(stack, 'carol');
    try {
      const created = await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } }, { headers: { traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01` } });
      assert.equal(created.response?.result?.resultType, 'task');
      const failed = await client.raw('tools/call', { name: 'tool_error', arguments: {} }, { envelope: 'plain' });
      assert.equal(failed.response?.result?.isError, true);
      await stack.gw.gateway.policy.tracing!.flush();
      const creation = one(receiver.spans, 'creation', (s) => s.kind === SPAN_KIND.SERVER && s.name === 'tools/call slow_scan');
      assert.equal(creation.traceId, HEADER_TRACE);
      assert.equal(creation.attributes['mcp.protocol.version'], '2026-07-28');
      assert.equal(creation.attributes['taskgate.mcp.era'], 'modern');
      assert.equal('mcp.session.id' in creation.attributes, false, 'sessions end with 2026-07-28');
      assert.equal(creation.attributes['taskgate.task.created'], true);
      const [call] = childrenOf(receiver.spans, creation);
      const meta = metaOf(backendCalls(stack, 'tools/call')[0]);
      assert.equal(meta?.traceparent, traceparentOf(call!));
      assert.equal(meta?.['io.modelcontextprotocol/protocolVersion'], '2026-07-28', 'the envelope the backend needs is still there');
      const toolError = one(receiver.spans, 'tool error', (s) => s.kind === SPAN_KIND.SERVER && s.name === 'tools/call tool_error');
      assert.equal(toolError.attributes['error.type'], 'tool_error');
      assert.equal(toolError.status.code, STATUS_CODE.ERROR);
      assert.equal(childrenOf(receiver.spans, toolError)[0]?.attributes['error.type'], 'tool_error');
    } finally {
      await client.close();
      await stack.close();
      await receiver.close();
    }
  });
});

describe('OpenTelemetry traces of a task the gateway runs itself', () => {
  it('makes the backend call a client span of the creating request, and the backend joins the trace', async () => {
    const receiver = await startOtlpReceiver();
    const stack = await startTaskStack({
      era: 'legacy',
      plain: true,
      providedTasks: { tools: ['slow_report'] },
      tasks: { poll: { default: '100ms' } },
      policy: { audit: { stdout: false, handleHashSalt: SALT }, tracing: { mode: 'otlp', endpoint: receiver.endpoint } },
    });
    const { client } = await tracedClient(stack, 'frank', {});
    try {
      const { task } = await client.request({ method: 'tools/call', params: { name: 'slow_report', arguments: { seconds: 0.2, steps: 1 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      let status = task.status;
      await waitFor(async () => status === 'completed' || (status = (await client.experimental.tasks.getTask(task.taskId)).status) === 'completed', () => `the task to complete (it is ${status})`, 10_000, 100);
      assert.equal(status, 'completed');
      await stack.gw.gateway.policy.tracing!.flush();
      const creation = one(receiver.spans, 'creation', (s) => s.kind === SPAN_KIND.SERVER && s.name === 'tools/call slow_report');
      assert.equal(creation.attributes['taskgate.task.created'], true);
      assert.equal(creation.attributes['taskgate.task.handle_hash'], createHandleHasher(SALT)(task.taskId));
      const run = one(receiver.spans, 'the backend call', (s) => s.kind === SPAN_KIND.CLIENT && s.attributes['taskgate.call.reason'] === 'run');
      assert.equal(run.name, 'tools/call slow_report');
      assert.equal(run.parentSpanId, creation.spanId);
      assert.equal(run.traceId, creation.traceId);
      assert.equal(run.attributes['http.response.status_code'], 200);
      const call = backendCalls(stack, 'tools/call').at(-1)!;
      assert.equal(call.headers.traceparent, traceparentOf(run));
      assert.equal(metaOf(call)?.traceparent, traceparentOf(run));
      assert.equal(typeof metaOf(call)?.progressToken, 'string', 'the gateway\'s progress token is still there');
    } finally {
      await client.close();
      await stack.close();
      await receiver.close();
    }
  });
});

describe('sampling', () => {
  async function echoThrough(stack: TaskStack, subject: string, headers: Record<string, string>): Promise<RecordedRequest> {
    const { client } = await tracedClient(stack, subject, headers);
    try {
      await client.request({ method: 'tools/call', params: { name: 'echo', arguments: { text: subject } } }, CallToolResultSchema);
    } finally {
      await client.close();
    }
    return backendCalls(stack, 'tools/call').at(-1)!;
  }

  for (const parent of ['follow', 'ignore'] as const) {
    it(`at ratio 0 with parent ${parent}: ${parent === 'follow' ? 'a client\'s sampled flag decides' : 'nothing is recorded'}, and every request still carries context`, async () => {
      const receiver = await startOtlpReceiver();
      const stack = await startTaskStack({
        era: 'legacy',
        policy: { audit: { stdout: false }, tracing: { mode: 'otlp', endpoint: receiver.endpoint, sampling: { ratio: 0, parent } } },
      });
      try {
        const sampled = await echoThrough(stack, 'dave', { traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01` });
        const unsampled = await echoThrough(stack, 'erin', {});
        await stack.gw.gateway.policy.tracing!.flush();
        const recorded = new Set(receiver.spans.map((s) => s.traceId));
        assert.equal(recorded.has(HEADER_TRACE), parent === 'follow');
        assert.match(String(sampled.headers.traceparent), new RegExp(`^00-${HEADER_TRACE}-[0-9a-f]{16}-0${parent === 'follow' ? 1 : 0}$`));
        const [, traceId, , flags] = String(unsampled.headers.traceparent).split('-');
        assert.equal(flags, '00', 'an unrecorded request says so downstream');
        assert.equal(recorded.has(traceId!), false);
        assert.equal(metaOf(unsampled)?.traceparent, unsampled.headers.traceparent);
      } finally {
        await stack.close();
        await receiver.close();
      }
    });
  }
});

describe('with tracing off (the default)', () => {
  it('builds no tracer and forwards the client\'s trace context and body as they came', async () => {
    const stack = await startTaskStack({ era: 'legacy', policy: { audit: { stdout: false } } });
    const clientParent = `00-${HEADER_TRACE}-${HEADER_SPAN}-01`;
    const metaParent = `00-${META_TRACE}-${META_SPAN}-00`;
    const { client } = await tracedClient(stack, 'bob', { traceparent: clientParent });
    try {
      assert.equal(stack.gw.gateway.policy.tracing, undefined);
      const result = await client.request({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' }, _meta: { traceparent: metaParent } } }, CallToolResultSchema);
      assert.deepEqual(result.content, [{ type: 'text', text: 'hi' }]);
      const call = backendCalls(stack, 'tools/call').at(-1)!;
      assert.equal(call.headers.traceparent, clientParent);
      assert.deepEqual(metaOf(call), { traceparent: metaParent });
    } finally {
      await client.close();
      await stack.close();
    }
  });
});
