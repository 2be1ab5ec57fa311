/**
 * Errors the gateway writes itself carry the HTTP status a server of the request's own era
 * would use (docs/errors.md): a 2025 client gets JSON-RPC errors in HTTP 200, as from an SDK
 * 1.x server, and never a 404 it would take for a lost session; a 2026-07-28 client gets the
 * 2026 statuses (404 for -32601, 400 for header, capability and params errors).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { LEGACY_POST_HEADERS, startStack, type Stack } from './support/harness.js';

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'era-test', version: '0' },
};

/** A 2026-07-28 POST with the mirrored headers derived from the body, then `headers` over them. */
async function modernPost(method: string, params: Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ status: number; error?: { code: number } }> {
  const res = await fetch(stack.gw.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof params.taskId === 'string' ? { 'mcp-name': params.taskId } : {}),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 5, method, params }),
  });
  const body = (await res.json()) as { id: unknown; error?: { code: number } };
  assert.equal(body.id, 5);
  return { status: res.status, error: body.error };
}

let stack: Stack;

describe('errors the gateway writes, by protocol era', () => {
  before(async () => {
    // auth.mode none: 2025 tasks/list has no principal to filter by, so the gateway refuses it.
    stack = await startStack();
  });
  after(() => stack.close());

  it('2025: the SDK 1.x client calling tasks/list without authentication gets -32601 as a JSON-RPC error and keeps its session', async () => {
    const client = new Client({ name: 'era-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(stack.gw.url));
    const transportErrors: Error[] = [];
    try {
      await client.connect(transport);
      transport.onerror = (error) => transportErrors.push(error);
      const sessionId = transport.sessionId;
      assert.ok(sessionId);
      assert.equal(client.getServerCapabilities()?.tasks?.list, undefined, 'tasks/list is not declared without authentication');
      stack.servers[0]!.stats.reset();
      await assert.rejects(client.experimental.tasks.listTasks(), (error: unknown) => {
        assert.ok(error instanceof McpError, `a JSON-RPC error, not a transport failure: ${String(error)}`);
        assert.equal(error.code, -32601);
        return true;
      });
      assert.deepEqual(transportErrors, []);
      assert.equal(stack.servers[0]!.stats.requests.filter((r) => r.rpcMethod === 'tasks/list').length, 0, 'answered by the gateway');
      // The session is intact: the next request goes through on it.
      const tools = await client.listTools();
      assert.ok(tools.tools.length > 0);
      assert.equal(transport.sessionId, sessionId);
    } finally {
      await client.close();
    }
  });

  it('2025: the refusal is HTTP 200 with the request id, on the wire', async () => {
    const init = await fetch(stack.gw.url, {
      method: 'POST',
      headers: LEGACY_POST_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }),
    });
    await init.text();
    const sessionId = init.headers.get('mcp-session-id') ?? '';
    const res = await fetch(stack.gw.url, {
      method: 'POST',
      headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'list-1', method: 'tasks/list' }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const body = (await res.json()) as { id: unknown; error: { code: number } };
    assert.equal(body.id, 'list-1');
    assert.equal(body.error.code, -32601);
  });

  describe('2026-07-28 requests keep the 2026 statuses', () => {
    const tasks = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    const cases: { name: string; call: () => ReturnType<typeof modernPost>; status: number; code: number }[] = [
      { name: 'tasks/list → 404 -32601', call: () => modernPost('tasks/list', { _meta: { ...MODERN_META, ...tasks } }), status: 404, code: -32601 },
      { name: 'tasks/result → 404 -32601', call: () => modernPost('tasks/result', { taskId: 'x', _meta: { ...MODERN_META, ...tasks } }), status: 404, code: -32601 },
      { name: 'tasks/get without the extension → 400 -32021', call: () => modernPost('tasks/get', { taskId: 'x', _meta: MODERN_META }), status: 400, code: -32021 },
      { name: 'a request without its _meta protocol version → 400 -32602', call: () => modernPost('tools/list', {}), status: 400, code: -32602 },
      { name: 'an Mcp-Method that differs from the body → 400 -32020', call: () => modernPost('tools/list', { _meta: MODERN_META }, { 'mcp-method': 'tools/call' }), status: 400, code: -32020 },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const answer = await c.call();
        assert.equal(answer.status, c.status);
        assert.equal(answer.error?.code, c.code);
      });
    }
  });
});
