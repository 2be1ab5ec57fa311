/**
 * Claims docs/security.md makes that only a misbehaving backend can put to the test: a 2026
 * task created for a request that never asked for one, and status notifications about a task
 * the gateway does not hold. The backends are the real example servers; a proxy in front of
 * them makes them misbehave (it declares the tasks extension on the client's behalf) or
 * records what they really sent to the gateway.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { isHandleShaped } from '../../src/tasks/handle.js';
import { startBackendProxy, type BackendProxy } from './support/backend-proxy.js';
import { LEGACY_POST_HEADERS, startGateway, testPolicy, type GatewayUnderTest } from './support/harness.js';
import { readMessages } from './support/reply-messages.js';
import { waitFor } from '../support/wait.js';

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'claims', version: '0' } };

/** A 2026-07-28 POST to `url` with its mirrored headers; `declare` adds the tasks extension. */
async function modernPost(url: string, method: string, params: Record<string, unknown>, declare: boolean) {
  const capabilities = declare ? { extensions: { [TASKS_EXTENSION]: {} } } : {};
  const name = typeof params.taskId === 'string' ? params.taskId : String(params.name);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { ...META, 'io.modelcontextprotocol/clientCapabilities': capabilities } } }),
  });
  const [message] = (await readMessages(res)) as { result?: Record<string, unknown>; error?: { code: number; data?: unknown } }[];
  return { status: res.status, text: JSON.stringify(message), ...message };
}

describe('a 2026 CreateTaskResult for a request that did not declare the extension', () => {
  let backend: ModernTaskServer;
  let proxy: BackendProxy;
  let gw: GatewayUnderTest;
  before(async () => {
    backend = await startModernTaskServer({ pollIntervalMs: 200 });
    // The backend is told the client declared the extension: it answers with a task, as a
    // backend that ignores the declaration would.
    proxy = await startBackendProxy(backend.url, {
      rewriteRequest: (message) => {
        if (message.method !== 'tools/call') return message;
        const params = message.params as { _meta: Record<string, unknown> };
        params._meta['io.modelcontextprotocol/clientCapabilities'] = { extensions: { [TASKS_EXTENSION]: {} } };
        return message;
      },
    });
    gw = await startGateway(testPolicy([proxy.url]));
  });
  after(async () => {
    await gw?.close();
    await proxy?.close();
    await backend?.close();
  });

  it('reaches the client as 400 -32021, and the task is cancelled upstream', async () => {
    const answer = await modernPost(gw.url, 'tools/call', { name: 'slow_scan', arguments: { seconds: 30 } }, false);
    assert.equal(answer.status, 400);
    assert.equal(answer.error?.code, -32021);
    assert.deepEqual(answer.error?.data, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });

    // The guard really ran: the backend did answer with a task.
    const created = JSON.parse(proxy.relayed()) as { result: { resultType: string; taskId: string } };
    assert.equal(created.result.resultType, 'task');
    const upstreamId = created.result.taskId;
    assert.ok(!answer.text.includes(upstreamId), 'the backend task id reached the client');

    await waitFor(() => backend.stats.requests.some((r) => r.rpcMethod === 'tasks/cancel' && (r.body as { params: { taskId: string } }).params.taskId === upstreamId), 'the gateway to cancel the task upstream');
    await waitFor(async () => (await modernPost(backend.url, 'tasks/get', { taskId: upstreamId }, true)).result?.status === 'cancelled', 'the backend to report the task cancelled');
  });
});

describe('a 2025 status notification about a task the gateway does not hold', () => {
  let backend: ExampleServer;
  let proxy: BackendProxy;
  let gw: GatewayUnderTest;
  before(async () => {
    backend = await startExampleServer();
    proxy = await startBackendProxy(backend.url);
    gw = await startGateway(testPolicy([proxy.url]));
  });
  after(async () => {
    await gw?.close();
    await proxy?.close();
    await backend?.close();
  });

  it('is dropped: the client never sees it nor the backend task id, while notifications about its own task arrive', async () => {
    const client = new Client({ name: 'claims', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(gw.url));
    const received: JSONRPCMessage[] = [];
    try {
      await client.connect(transport);
      const deliver = transport.onmessage!;
      transport.onmessage = (message: JSONRPCMessage) => {
        received.push(message);
        deliver(message);
      };
      const { task: own } = await client.request({ method: 'tools/call', params: { name: 'report_status', arguments: { message: 'mine', seconds: 30 } as never, task: { ttl: 60_000 } } }, CreateTaskResultSchema);

      // The same backend session makes a task behind the gateway's back.
      const direct = await fetch(backend.url, {
        method: 'POST',
        headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': transport.sessionId! },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'direct-1', method: 'tools/call', params: { name: 'report_status', arguments: { message: 'not yours', seconds: 30 }, task: { ttl: 60_000 } } }),
      });
      const [reply] = (await readMessages(direct)) as { result: { task: { taskId: string } } }[];
      const foreign = reply!.result.task.taskId;

      const isStatus = (m: Record<string, unknown>) => m.method === 'notifications/tasks/status';
      const isAbout = (taskId: string) => (m: Record<string, unknown>) => isStatus(m) && (m.params as { taskId?: string }).taskId === taskId;
      // The backend sends both tasks' notifications on the session's one GET stream, and the
      // gateway relays a stream in order: once the client holds the own-task notification the
      // backend sent after a foreign one, the gateway has already dealt with that foreign one.
      // So wait for that notification, counted among the own ones the backend sent up to it.
      let ownSentUpToIt = 0;
      await waitFor(
        () => {
          const sent = relayedMessages(proxy).filter(isStatus);
          const firstForeign = sent.findIndex(isAbout(foreign));
          const nextOwn = sent.findIndex((m, i) => i > firstForeign && !isAbout(foreign)(m));
          if (firstForeign < 0 || nextOwn < 0) return false;
          ownSentUpToIt = sent.slice(0, nextOwn + 1).filter((m) => !isAbout(foreign)(m)).length;
          return true;
        },
        'the backend to send a notification about the foreign task, then one about the client\'s own',
        10_000,
      );
      await waitFor(
        () => (received as Record<string, unknown>[]).filter(isAbout(own.taskId)).length >= ownSentUpToIt,
        `the client to receive the ${ownSentUpToIt} notifications about its own task the backend sent up to one after the foreign task's`,
        10_000,
      );
      assert.ok(!JSON.stringify(received).includes(foreign), 'the foreign task id reached the client');
      for (const message of received as Record<string, unknown>[]) {
        if (message.method === 'notifications/tasks/status') assert.ok(isHandleShaped((message.params as { taskId: string }).taskId));
      }
    } finally {
      await client.close();
    }
  });
});

/** Every JSON-RPC message the backend sent through the proxy, from JSON bodies and SSE data lines. */
function relayedMessages(proxy: BackendProxy): Record<string, unknown>[] {
  return proxy
    .relayed()
    .split('\n')
    .map((line) => line.replace(/^data: /, '').trim())
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}
