/**
 * The door's calls about task records (src/upstream/task-calls.ts), against a real HTTP backend
 * on port 0 through a real undici agent: each framed in its backend's generation, with the
 * owner's credentials, counted in the snapshot's work while it runs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InFlight } from '../../../src/lifecycle/in-flight.js';
import type { TaskRecord } from '../../../src/task-model/task-record.js';
import { createTaskCalls, type TaskCallsOptions } from '../../../src/upstream/task-calls.js';
import { replyEvents, replyJson, scriptedBackendPerFile } from '../../support/scripted-backend.js';
import { taskRecord } from '../../support/task-records.js';

const scripted = scriptedBackendPerFile();
const agent = scripted.agent;

function calls(overrides: Partial<TaskCallsOptions> = {}) {
  const inFlight = new InFlight();
  const options: TaskCallsOptions = {
    agentFor: (upstream) => (upstream === 'tools' ? agent : undefined),
    credentialHeadersFor: async (record) => ({ authorization: `Bearer for-${record.owner}` }),
    inFlight,
    maxAnswerBytes: 1024,
    ...overrides,
  };
  return { ...createTaskCalls(options), inFlight };
}

const at = (overrides: Partial<TaskRecord>): TaskRecord => taskRecord({ instance: scripted.backend.origin, ...overrides });

describe('createTaskCalls: call', () => {
  it('asks a 2026 backend with the mirrored headers, the envelope and the owner\'s credentials, and reads its answer', async () => {
    scripted.backend.answer = (body, res) => replyJson(res, { jsonrpc: '2.0', id: body.id, result: { taskId: 'up-1', status: 'working' } });
    const record = at({ era: 'modern', protocolVersion: '2026-07-28', upstreamTaskId: 'up-1', upstreamSession: undefined });
    const answer = await calls().call(record, 'tasks/get', { reason: 'push' });
    assert.equal(answer.status, 200);
    assert.equal(answer.contentType, 'application/json');
    assert.deepEqual(JSON.parse(answer.body!).result, { taskId: 'up-1', status: 'working' });
    const { headers, body } = scripted.backend.received[0]!;
    assert.equal(headers['mcp-protocol-version'], '2026-07-28');
    assert.equal(headers['mcp-method'], 'tasks/get');
    assert.equal(headers['mcp-name'], 'up-1');
    assert.equal(headers.authorization, 'Bearer for-owner-a');
    assert.equal(headers['mcp-session-id'], undefined);
    assert.match(String(body.id), /^taskgate-/);
    assert.deepEqual(body.params, {
      taskId: 'up-1',
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'taskgate', version: '0' },
        'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      },
    });
  });

  it('asks a 2025 backend in the task\'s session, and a bridged task in its backend\'s generation', async () => {
    const api = calls();
    await api.call(at({ era: 'legacy', upstreamSession: 'sess-9', protocolVersion: '2025-06-18' }), 'tasks/cancel', { reason: 'expired' });
    // A 2026 client's task bridged to a 2025 backend: the record keeps the backend's version.
    await api.call(at({ kind: 'bridged', era: 'modern', upstreamSession: 'sess-2', protocolVersion: '2025-11-25' }), 'tasks/result', { reason: 'push' });
    const [legacy, bridged] = scripted.backend.received;
    assert.equal(legacy!.headers['mcp-protocol-version'], '2025-06-18');
    assert.equal(legacy!.headers['mcp-session-id'], 'sess-9');
    assert.equal(legacy!.headers['mcp-method'], undefined);
    assert.deepEqual(legacy!.body.params, { taskId: legacy!.body.params!.taskId });
    assert.equal(bridged!.headers['mcp-session-id'], 'sess-2');
    assert.equal(bridged!.body.method, 'tasks/result');
  });

  it('drains a cancel\'s answer unless it is asked for, and counts each call in flight until it is read', async () => {
    const api = calls();
    let during = -1;
    scripted.backend.answer = (body, res) => {
      during = api.inFlight.size;
      replyEvents(res, [{ jsonrpc: '2.0', method: 'notifications/progress', params: {} }, { jsonrpc: '2.0', id: body.id, result: {} }]);
    };
    const record = at({ era: 'modern', protocolVersion: '2026-07-28' });
    assert.deepEqual(await api.call(record, 'tasks/cancel', { reason: 'expired' }), { status: 200 });
    const read = await api.call(record, 'tasks/cancel', { reason: 'operator', readAnswer: true });
    assert.equal(read.contentType, 'text/event-stream');
    assert.match(read.body!, /"result":\{\}/);
    assert.equal(during, 1);
    assert.equal(api.inFlight.size, 0);
  });

  it('fails without sending when the owner has no credentials left, or the upstream is unknown', async () => {
    const refused = calls({ credentialHeadersFor: () => Promise.reject(new Error('no exchange cached')) });
    await assert.rejects(refused.call(at({}), 'tasks/cancel', { reason: 'expired' }), /no exchange cached/);
    assert.equal(refused.inFlight.size, 0);
    await assert.rejects(calls().call(at({ upstream: 'gone' }), 'tasks/cancel', { reason: 'expired' }), /no dispatcher for upstream gone/);
    assert.equal(scripted.backend.received.length, 0);
  });

  it('refuses an answer past the limit', async () => {
    scripted.backend.answer = (body, res) => replyJson(res, { jsonrpc: '2.0', id: body.id, result: { text: 'x'.repeat(4096) } });
    await assert.rejects(calls().call(at({}), 'tasks/get', { reason: 'push' }), /exceeds 1024 bytes/);
  });
});

describe('createTaskCalls: listen', () => {
  it('opens a 2026 listen for backend ids with the owner\'s credentials, and leaves the stream to the caller', async () => {
    scripted.backend.answer = (_body, res) => replyEvents(res, [{ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: {} }], false);
    const abort = new AbortController();
    const record = at({ era: 'modern', protocolVersion: '2026-07-28' });
    const reply = await calls().listen(record, ['up-1', 'up-2'], abort.signal);
    assert.equal(reply.headers['content-type'], 'text/event-stream');
    abort.abort();
    await assert.rejects(reply.body.text());
    const { headers, body } = scripted.backend.received[0]!;
    assert.equal(body.method, 'subscriptions/listen');
    assert.deepEqual((body.params as { notifications: unknown }).notifications, { taskIds: ['up-1', 'up-2'] });
    assert.equal(headers['mcp-method'], 'subscriptions/listen');
    assert.equal(headers['mcp-name'], undefined, 'a listen names no task in Mcp-Name');
    assert.equal(headers.authorization, 'Bearer for-owner-a');
  });
});
