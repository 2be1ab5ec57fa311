import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJsonRpcBody } from '../../../src/mcp/jsonrpc.js';
import type { McpContext } from '../../../src/pipeline/exchange.js';
import { bodyWithTraceContext, injectHeaders, remoteSpanContext, spanContextOfTraceparent } from '../../../src/tracing/propagation.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const CARRIER = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01', tracestate: 'congo=t61rcWkgMzE' };

function mcpOf(text: string): McpContext {
  const parsed = parseJsonRpcBody(text);
  return { messages: parsed.messages, batch: parsed.batch, era: 'legacy', message: parsed.batch ? undefined : parsed.messages[0], body: Buffer.from(text) };
}

describe('trace context propagation', () => {
  it('reads a valid traceparent from headers or _meta, and nothing from a malformed or absent one', () => {
    assert.equal(remoteSpanContext({ traceparent: PARENT })?.spanId, '00f067aa0ba902b7');
    assert.equal(remoteSpanContext({ traceparent: PARENT, tracestate: 'a=b' })?.traceState?.get('a'), 'b');
    assert.equal(remoteSpanContext({ traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' }), undefined);
    assert.equal(remoteSpanContext({ traceparent: 42 }), undefined);
    assert.equal(remoteSpanContext({}), undefined);
    assert.equal(remoteSpanContext(undefined), undefined);
    assert.equal(spanContextOfTraceparent(PARENT)?.isRemote, true);
  });

  it('puts the context in the headers, dropping a tracestate that belonged to the client\'s context', () => {
    const headers: Record<string, string> = { traceparent: PARENT, tracestate: 'old=1' };
    injectHeaders(headers, { traceparent: CARRIER.traceparent });
    assert.deepEqual(headers, { traceparent: CARRIER.traceparent });
    injectHeaders(headers, CARRIER);
    assert.deepEqual(headers, CARRIER);
  });

  it('adds the context at the root of _meta of every request and notification, keeping the rest', () => {
    const mcp = mcpOf(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, _meta: { traceparent: PARENT, 'x.example/keep': 1 } } },
        { jsonrpc: '2.0', id: 2, result: {} },
      ]),
    );
    const body = JSON.parse(bodyWithTraceContext(mcp, CARRIER).toString('utf8')) as Record<string, unknown>[];
    assert.deepEqual(body, [
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: CARRIER } },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, _meta: { ...CARRIER, 'x.example/keep': 1 } } },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
  });

  it('leaves a body alone when it has nowhere to carry the context', () => {
    const text = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":"not an object"}}';
    const mcp = mcpOf(text);
    assert.equal(bodyWithTraceContext(mcp, CARRIER), mcp.body);
  });
});
