/**
 * One backend call of a gateway-run task (src/provided/call-runner.ts, started by
 * call-start.ts's startCall), against a real HTTP backend on port 0 through a real undici
 * agent: what the backend is sent, how each kind of reply settles the call, and how a call
 * the gateway stops is stopped (2025: the backend told first).
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from 'undici';
import type { CallOutcome, CallReports, CallTarget } from '../../../src/provided/call-runner.js';
import { startCall } from '../../../src/provided/call-start.js';
import { sendThrough } from '../../../src/upstream/gateway-send.js';
import type { JsonRpcRequest } from '../../../src/mcp/jsonrpc.js';
import { replyEvents as sse, replyJson as json, startScriptedBackend, type ScriptedBackend } from '../../support/scripted-backend.js';
import { waitFor } from '../../support/wait.js';

let backend: ScriptedBackend;
let origin: string;
let received: ScriptedBackend['received'];
const agent = new Agent({ connections: 4 });

before(async () => {
  backend = await startScriptedBackend();
  origin = backend.origin;
  received = backend.received;
});
afterEach(() => backend.reset());
after(async () => {
  await backend.close();
  await agent.close();
});

function target(version = '2026-07-28', at = origin): CallTarget {
  return { origin: at, send: sendThrough(agent, at, '/mcp'), headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': version }, hold: () => () => undefined };
}

function run(opts: { version?: string; timeoutMs?: number; reports?: CallReports; maxResponseBytes?: number; at?: string; extraParams?: Record<string, unknown> } = {}) {
  const call = { params: { name: 'slow_scan', arguments: { depth: 2 }, _meta: { client: 'kept' } }, headers: {} };
  return startCall(target(opts.version, opts.at), { call, extraParams: opts.extraParams, timeoutMs: opts.timeoutMs ?? 5000 }, { maxResponseBytes: opts.maxResponseBytes ?? 64 * 1024, maxSseEventBytes: 64 * 1024 }, opts.reports ?? {});
}

const failureOf = (outcome: CallOutcome) => (outcome.kind === 'failure' ? outcome : assert.fail(`expected a failure, got ${JSON.stringify(outcome)}`));

describe('startCall', () => {
  it('sends a plain tools/call under an id and progress token of the gateway\'s, the client\'s _meta and the extra params kept', async () => {
    backend.answer = (body, res) => json(res, { jsonrpc: '2.0', id: body.id, result: { content: [] } });
    const runner = run({ extraParams: { requestState: 'r1', inputResponses: { name: 'Ada' } } });
    await runner.outcome;
    const { body, headers } = received[0]!;
    assert.equal(body.method, 'tools/call');
    assert.equal(body.id, runner.callId);
    assert.match(runner.callId, /^taskgate-[0-9a-f-]{36}$/);
    assert.deepEqual(body.params, { name: 'slow_scan', arguments: { depth: 2 }, _meta: { client: 'kept', progressToken: runner.callId }, requestState: 'r1', inputResponses: { name: 'Ada' } });
    assert.equal(headers['mcp-protocol-version'], '2026-07-28');
  });
});

describe('CallRunner: replies', () => {
  it('settles with a JSON answer to its call and the HTTP status it came with', async () => {
    backend.answer = (body, res) => json(res, { jsonrpc: '2.0', id: body.id, result: { content: [{ type: 'text', text: '42' }] } }, 200);
    const outcome = await run().outcome;
    assert.equal(outcome.kind, 'answer');
    assert.equal(outcome.kind === 'answer' && outcome.status, 200);
    assert.deepEqual(outcome.kind === 'answer' && outcome.response.result, { content: [{ type: 'text', text: '42' }] });
  });

  it('settles with the backend\'s JSON-RPC error as an answer', async () => {
    backend.answer = (body, res) => json(res, { jsonrpc: '2.0', id: body.id, error: { code: -32602, message: 'bad arguments' } }, 400);
    const outcome = await run().outcome;
    assert.equal(outcome.kind === 'answer' && outcome.status, 400);
    assert.deepEqual(outcome.kind === 'answer' && outcome.response.error, { code: -32602, message: 'bad arguments' });
  });

  it('reads an event stream: progress and server requests reported as they come, then the answer', async () => {
    const progress: string[] = [];
    const asked: JsonRpcRequest[] = [];
    backend.answer = (body, res) =>
      sse(res, [
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: body.id, progress: 1, total: 4 } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: body.id, progress: 2 } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: body.id, progress: 3, message: 'indexing' } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: body.id, message: 'm'.repeat(5000) } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: body.id, progress: 'lots' } },
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'not progress' } },
        { jsonrpc: '2.0', id: 'srv-1', method: 'elicitation/create', params: { message: 'name?' } },
        { jsonrpc: '2.0', id: 'someone-else', result: { content: [{ type: 'text', text: 'not ours' }] } },
        { jsonrpc: '2.0', id: body.id, result: { content: [{ type: 'text', text: 'ours' }] } },
        { jsonrpc: '2.0', id: body.id, result: { content: [{ type: 'text', text: 'a second answer' }] } },
      ]);
    const outcome = await run({ reports: { onProgress: (text) => progress.push(text), onServerRequest: async (request) => void asked.push(request) } }).outcome;
    assert.deepEqual(progress.slice(0, 3), ['progress 1/4', 'progress 2', 'indexing']);
    assert.equal(progress.length, 4, 'a progress that is neither a number nor a message says nothing');
    assert.equal(progress[3]!.length, 1024, 'a long message is cut');
    assert.deepEqual(asked.map((r) => [r.id, r.method]), [['srv-1', 'elicitation/create']]);
    assert.deepEqual(outcome.kind === 'answer' && outcome.response.result, { content: [{ type: 'text', text: 'ours' }] }, 'the first answer to this call');
  });

  it('fails as a bad reply without an answer to its call: another id, no body, a type it cannot read', async () => {
    for (const reply of [
      (res: ServerResponse) => json(res, { jsonrpc: '2.0', id: 'not-this-call', result: {} }),
      (res: ServerResponse) => res.writeHead(202).end(),
      (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hello</p>'),
      (res: ServerResponse) => sse(res, [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } }]),
    ]) {
      backend.answer = (_body, res) => reply(res);
      const failure = failureOf(await run().outcome);
      assert.equal(failure.failure, 'bad_reply');
      assert.match(failure.message, /^the backend answered HTTP \d+ without an answer to the call$/);
    }
  });

  it('fails as a bad reply on JSON it cannot parse, or larger than the response limit', async () => {
    backend.answer = (_body, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":');
    assert.equal(failureOf(await run().outcome).failure, 'bad_reply');
    backend.answer = (body, res) => json(res, { jsonrpc: '2.0', id: body.id, result: { text: 'x'.repeat(10_000) } });
    const failure = failureOf(await run({ maxResponseBytes: 1000 }).outcome);
    assert.equal(failure.failure, 'bad_reply');
    assert.match(failure.message, /^the backend's reply could not be read: /);
    assert.equal(failure.message.includes('xxxx'), false, 'a failure never carries the body');
  });

  it('fails as unreachable when nothing listens, naming the network error and nothing else', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const at = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const failure = failureOf(await run({ at }).outcome);
    assert.equal(failure.failure, 'unreachable');
    assert.equal(failure.message, 'the backend could not be reached: ECONNREFUSED');
  });
});

describe('CallRunner: stopping a call', () => {
  it('fails with timeout once the call has taken its time, headers or body', async () => {
    backend.answer = () => undefined; // never answers
    const failure = failureOf(await run({ timeoutMs: 100 }).outcome);
    assert.deepEqual(failure, { kind: 'failure', failure: 'timeout', message: 'the backend did not answer within 100 ms' });
    backend.answer = (_body, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': still here\n\n'); // a stream that never ends
    assert.equal(failureOf(await run({ timeoutMs: 150 }).outcome).failure, 'timeout');
  });

  it('2026: stops at once, the closed stream being the cancellation; the failure is the one it was stopped with', async () => {
    backend.answer = () => undefined;
    const runner = run({ version: '2026-07-28' });
    await waitFor(() => received.length === 1, 'the call to arrive');
    runner.abort('aborted', 'the task was cancelled');
    runner.abort('shutdown', 'a second reason is ignored');
    assert.deepEqual(await runner.outcome, { kind: 'failure', failure: 'aborted', message: 'the task was cancelled' });
    assert.equal(received.length, 1, 'no notice sent (one would have arrived before the cut)');
  });

  it('2025: names the call in notifications/cancelled in its session first, then cuts it', async () => {
    backend.answer = (body, res) => {
      if (body.method === 'notifications/cancelled') res.writeHead(202).end();
    };
    const runner = run({ version: '2025-11-25' });
    await waitFor(() => received.length === 1, 'the call to arrive');
    runner.abort('shutdown', 'the gateway shut down');
    const outcome = await runner.outcome;
    assert.deepEqual(outcome, { kind: 'failure', failure: 'shutdown', message: 'the gateway shut down' });
    const notice = received[1]!;
    assert.deepEqual(notice.body, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: runner.callId, reason: 'the gateway shut down' } });
    assert.equal(notice.headers['mcp-protocol-version'], '2025-11-25');
  });

  it('refuses a question of the backend\'s in the call\'s session: an error answer under the backend\'s id', async () => {
    // The call runs on; what else the gateway sends is taken with a 202.
    backend.answer = (body, res) => void (body.method !== 'tools/call' && res.writeHead(202).end());
    const runner = run({ version: '2025-11-25' });
    await waitFor(() => received.length === 1, 'the call to arrive');
    await runner.refuseServerRequest('srv-7', 'no task to ask through');
    assert.deepEqual(received[1]!.body, { jsonrpc: '2.0', id: 'srv-7', error: { code: -32603, message: 'no task to ask through' } });
    assert.equal(received[1]!.headers['mcp-protocol-version'], '2025-11-25');
    runner.abort('aborted', 'done');
    assert.equal(failureOf(await runner.outcome).failure, 'aborted', 'the refusal did not end the call');
  });

  it('2025: cuts the call even when the backend takes no notice', async () => {
    backend.answer = () => undefined; // the notice is never answered either
    const runner = run({ version: '2025-11-25' });
    await waitFor(() => received.length === 1, 'the call to arrive');
    runner.abort('aborted', 'cancelled');
    assert.equal(failureOf(await runner.outcome).failure, 'aborted');
  });
});
