/**
 * The layers of the gateway's own requests (src/upstream/gateway-send.ts), against a real HTTP
 * backend on port 0 through a real undici agent: what each adds, and the order they compose in.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InFlight } from '../../../src/lifecycle/in-flight.js';
import type { TaskCallSpan } from '../../../src/tracing/task-calls.js';
import {
  composeSend,
  credentials,
  heldIn,
  sendThrough,
  spanOutcome,
  timeLimits,
  traceContext,
  type GatewayRequest,
  type Send,
  type SendLayer,
} from '../../../src/upstream/gateway-send.js';
import { replyJson, scriptedBackendPerFile } from '../../support/scripted-backend.js';

const scripted = scriptedBackendPerFile();
const agent = scripted.agent;

const statusOf = (send: Send, request: GatewayRequest) => send(request, async (reply) => (await reply.body.dump(), reply.statusCode));

/** A span that writes down what was done with it. */
function recordingSpan(): TaskCallSpan & { readonly log: string[] } {
  const log: string[] = [];
  return {
    log,
    injectHeaders: (headers) => void (headers.traceparent = '00-trace-span-01'),
    injectMeta: (params) => void ((params._meta as Record<string, unknown>).traceparent = '00-trace-span-01'),
    responded: (status) => void log.push(`responded ${status}`),
    failed: (kind) => void log.push(`failed ${kind}`),
    end: () => void log.push('end'),
  };
}

describe('sendThrough', () => {
  it('POSTs a JSON-RPC message as JSON that reads JSON or a stream; the request\'s own headers win', async () => {
    const send = sendThrough(agent, scripted.backend.origin, '/mcp');
    assert.equal(await statusOf(send, { headers: { 'x-one': '1' }, message: { jsonrpc: '2.0', id: 'a', method: 'ping' } }), 200);
    assert.equal(await statusOf(send, { headers: { accept: 'application/json' }, message: { jsonrpc: '2.0', method: 'notifications/initialized' } }), 200);
    const [first, second] = scripted.backend.received;
    assert.deepEqual(first!.body, { jsonrpc: '2.0', id: 'a', method: 'ping' });
    assert.equal(first!.headers['content-type'], 'application/json');
    assert.equal(first!.headers.accept, 'application/json, text/event-stream');
    assert.equal(first!.headers['x-one'], '1');
    assert.equal(second!.headers.accept, 'application/json');
  });

  it('sends a request without a message (a DELETE) with its headers alone', async () => {
    assert.equal(await statusOf(sendThrough(agent, scripted.backend.origin, '/mcp'), { method: 'DELETE', headers: { 'mcp-session-id': 's' } }), 200);
    assert.equal(scripted.backend.received[0]!.headers['mcp-session-id'], 's');
    assert.equal(scripted.backend.received[0]!.headers['content-type'], undefined);
  });
});

describe('the layers', () => {
  it('compose as Dispatcher.compose does: the last given runs first', async () => {
    const order: string[] = [];
    const mark = (name: string): SendLayer => (next) => (request, read) => (order.push(name), next(request, read));
    await statusOf(composeSend(sendThrough(agent, scripted.backend.origin, '/mcp'), mark('inner'), undefined, mark('outer')), { headers: {} });
    assert.deepEqual(order, ['outer', 'inner']);
  });

  it('timeLimits gives undici the kind\'s timers unless the request has its own', async () => {
    const seen: GatewayRequest[] = [];
    const spy: Send = async (request) => (seen.push(request), undefined as never);
    const limited = composeSend(spy, timeLimits(10, 0));
    await limited({ headers: {} }, async () => undefined);
    await limited({ headers: {}, headersTimeout: 5, bodyTimeout: 7 }, async () => undefined);
    assert.deepEqual(seen.map((request) => [request.headersTimeout, request.bodyTimeout]), [[10, 0], [5, 7]]);
    // A backend that never answers: undici's headers timer ends the call.
    scripted.backend.answer = () => undefined;
    const slow = composeSend(sendThrough(agent, scripted.backend.origin, '/mcp'), timeLimits(50, 50));
    await assert.rejects(statusOf(slow, { headers: {}, message: { jsonrpc: '2.0', id: 1, method: 'ping' } }), (error: { code?: string }) => error.code === 'UND_ERR_HEADERS_TIMEOUT');
  });

  it('credentials go over the request\'s headers; a refusal sends nothing', async () => {
    const send = composeSend(sendThrough(agent, scripted.backend.origin, '/mcp'), credentials(async () => ({ authorization: 'Bearer gateway' })));
    await statusOf(send, { headers: { authorization: 'Bearer client', 'x-kept': 'yes' } });
    assert.equal(scripted.backend.received[0]!.headers.authorization, 'Bearer gateway');
    assert.equal(scripted.backend.received[0]!.headers['x-kept'], 'yes');
    const refused = composeSend(sendThrough(agent, scripted.backend.origin, '/mcp'), credentials(() => Promise.reject(new Error('no token left'))));
    await assert.rejects(statusOf(refused, { headers: {} }), /no token left/);
    assert.equal(scripted.backend.received.length, 1);
  });

  it('traceContext puts the span in every request\'s headers, and in the _meta of a JSON-RPC request only', async () => {
    const span = recordingSpan();
    const send = composeSend(sendThrough(agent, scripted.backend.origin, '/mcp'), traceContext(span));
    const params = { name: 'x', _meta: { progressToken: 'p' } };
    await statusOf(send, { headers: {}, message: { jsonrpc: '2.0', id: 1, method: 'tools/call', params } });
    await statusOf(send, { headers: {}, message: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } } });
    await statusOf(send, { headers: {}, message: { jsonrpc: '2.0', id: 'srv-1', result: {} } });
    assert.deepEqual(scripted.backend.received.map((r) => r.headers.traceparent), ['00-trace-span-01', '00-trace-span-01', '00-trace-span-01']);
    assert.deepEqual(scripted.backend.received[0]!.body.params, { name: 'x', _meta: { progressToken: 'p', traceparent: '00-trace-span-01' } });
    assert.deepEqual(scripted.backend.received[1]!.body.params, { requestId: 1 });
    assert.deepEqual(scripted.backend.received[2]!.body, { jsonrpc: '2.0', id: 'srv-1', result: {} });
    assert.deepEqual(params, { name: 'x', _meta: { progressToken: 'p' } }, 'the caller\'s params are left as they were');
    assert.equal(traceContext(undefined), undefined, 'no layer with tracing off');
  });

  it('spanOutcome ends the span with the status, or the failure\'s code', async () => {
    scripted.backend.answer = (_body, res) => replyJson(res, {}, 503);
    const answered = recordingSpan();
    await statusOf(composeSend(sendThrough(agent, scripted.backend.origin, '/mcp'), spanOutcome(answered)), { headers: {} });
    assert.deepEqual(answered.log, ['responded 503', 'end']);
    const refused = recordingSpan();
    const nowhere = composeSend(sendThrough(agent, 'http://127.0.0.1:1', '/mcp'), spanOutcome(refused));
    await assert.rejects(statusOf(nowhere, { headers: {} }));
    assert.deepEqual(refused.log, ['failed ECONNREFUSED', 'end']);
  });

  it('heldIn counts the call in the snapshot\'s work until its reply is read', async () => {
    const inFlight = new InFlight();
    const send = composeSend(sendThrough(agent, scripted.backend.origin, '/mcp'), heldIn(inFlight));
    let during = -1;
    await send({ headers: {} }, async (reply) => {
      during = inFlight.size;
      await reply.body.dump();
    });
    assert.equal(during, 1);
    assert.equal(inFlight.size, 0);
    await assert.rejects(composeSend(sendThrough(agent, 'http://127.0.0.1:1', '/mcp'), heldIn(inFlight))({ headers: {} }, async () => undefined));
    assert.equal(inFlight.size, 0, 'a failed call is counted out too');
  });
});
