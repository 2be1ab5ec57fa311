/**
 * Routing by handle and durable creation: new work is balanced, every task request reaches
 * the instance that holds its task, and a tasks/get sent the instant a creation result
 * arrives always resolves.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { readMessages } from './support/reply-messages.js';

describe('three instances behind one route', () => {
  let stack: TaskStack;
  let client: ModernTaskClient;
  before(async () => {
    stack = await startTaskStack({ era: 'modern', count: 3, tasks: { poll: { floor: '0s', tolerance: '1s' } } });
    client = await modernClient(stack, 'alice');
  });
  after(async () => {
    await client?.close();
    await stack?.close();
  });

  it('creates tasks on all three and sends each task request to its owning instance', async () => {
    const handles: string[] = [];
    for (let i = 0; i < 9; i++) {
      const exchange = await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      handles.push(String(exchange.response?.result?.taskId));
    }
    const created = stack.modern.map((s: ModernTaskServer) => s.tasks.count());
    assert.deepEqual(created, [3, 3, 3], 'round-robin spread the new work');
    for (const s of stack.backends) s.stats.reset();
    for (const handle of handles) {
      for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
        const params = method === 'tasks/update' ? { taskId: handle, inputResponses: {} } : { taskId: handle };
        const exchange = await client.raw(method, params);
        // A request sent to another instance would get that backend's own -32602.
        assert.equal(exchange.status, 200, `${method}: ${JSON.stringify(exchange.response)}`);
        assert.equal(exchange.response?.error, undefined, `${method}: ${JSON.stringify(exchange.response)}`);
      }
    }
    // Each instance got exactly the requests for its own three tasks: nine each.
    const perInstance = stack.backends.map((b) => b.stats.requests.filter((r) => r.rpcMethod?.startsWith('tasks/')).length);
    assert.deepEqual(perInstance, [9, 9, 9]);
  });
});

for (const era of ['modern', 'legacy'] as const) {
  describe(`durable creation (${era})`, () => {
    let stack: TaskStack;
    before(async () => {
      stack = await startTaskStack({ era, enableJsonResponse: true });
    });
    after(() => stack?.close());

    it('resolves a tasks/get sent the instant the creation result arrives, every time', async () => {
      const authorization = await stack.bearer('alice');
      const headers = era === 'modern' ? modernHeaders(authorization) : await legacyHeaders(stack, authorization);
      for (let i = 0; i < 30; i++) {
        const created = await post(stack, headers('tools/call', 'slow_scan'), createBody(era, i));
        const taskId = era === 'modern' ? created.result.taskId : created.result.task.taskId;
        const polled = await post(stack, headers('tasks/get', taskId), getBody(era, 1000 + i, taskId));
        assert.equal(polled.error, undefined, JSON.stringify(polled));
        assert.equal(polled.result.taskId, taskId);
      }
    });
  });
}

type Headers = (method: string, name: string) => Record<string, string>;

function modernHeaders(authorization: string): Headers {
  return (method, name) => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    'mcp-name': name,
    authorization,
  });
}

async function legacyHeaders(stack: TaskStack, authorization: string): Promise<Headers> {
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', authorization };
  const init = await fetch(stack.gw.url, {
    method: 'POST',
    headers: base,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }),
  });
  await init.text();
  const session = init.headers.get('mcp-session-id')!;
  await (await fetch(stack.gw.url, { method: 'POST', headers: { ...base, 'mcp-session-id': session }, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' })).text();
  return () => ({ ...base, 'mcp-session-id': session });
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

function createBody(era: 'modern' | 'legacy', id: number): unknown {
  return era === 'modern'
    ? { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 5 }, _meta: META } }
    : { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 5 }, task: { ttl: 60_000 } } };
}

function getBody(era: 'modern' | 'legacy', id: number, taskId: string): unknown {
  return { jsonrpc: '2.0', id, method: 'tasks/get', params: era === 'modern' ? { taskId, _meta: META } : { taskId } };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function post(stack: TaskStack, headers: Record<string, string>, body: unknown): Promise<any> {
  const res = await fetch(stack.gw.url, { method: 'POST', headers, body: JSON.stringify(body) });
  return (await readMessages(res))[0];
}
