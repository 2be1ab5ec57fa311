// The bridge's pure parts: the generation label operators see, a 2026 request's params made
// fit for a 2025 backend, and the answer read from a body the gateway's own calls return.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { labelOf } from '../../../src/bridge/backend-generations.js';
import { legacyParams } from '../../../src/bridge/modern-requests.js';
import { rpcResponseOf as parseAnswerBody } from '../../../src/mcp/event-stream.js';

describe('the generation label', () => {
  it('says what is certain, and unknown while a question has no answer', () => {
    assert.equal(labelOf({}), 'unknown');
    assert.equal(labelOf({ modernTasks: true, legacyTasks: false }), '2026-07-28');
    assert.equal(labelOf({ modernTasks: false, legacyTasks: true }), '2025-11-25');
    assert.equal(labelOf({ modernTasks: true, legacyTasks: true }), 'both');
    assert.equal(labelOf({ modernTasks: false, legacyTasks: false }), 'none');
    assert.equal(labelOf({ modernTasks: false }), 'unknown', 'no tasks in one era, the other not answered yet');
    assert.equal(labelOf({ modernTasks: true }), '2026-07-28', 'a generation served is certain whatever the other says');
  });
});

describe('a 2026 request for a 2025 backend', () => {
  it('loses the per-request envelope and the progress token, and keeps the rest of _meta', () => {
    const params = {
      name: 'slow_scan',
      arguments: { seconds: 1 },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { extensions: {} },
        'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
        progressToken: 7,
        traceparent: '00-abc',
      },
    };
    assert.deepEqual(legacyParams(params), { name: 'slow_scan', arguments: { seconds: 1 }, _meta: { traceparent: '00-abc' } });
    assert.deepEqual(legacyParams({ name: 'x', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } }), { name: 'x' });
  });
});

describe('an answer read whole', () => {
  it('finds the response in a JSON body and in an event stream with a priming event', () => {
    assert.deepEqual(parseAnswerBody('{"jsonrpc":"2.0","id":"a","result":{"ok":true}}', 'application/json')?.result, { ok: true });
    const stream = 'id: 1\ndata:\n\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\nevent: message\ndata: {"jsonrpc":"2.0","id":"a","result":{"n":1}}\n\n';
    assert.deepEqual(parseAnswerBody(stream, 'text/event-stream')?.result, { n: 1 });
    assert.equal(parseAnswerBody(undefined, 'application/json'), undefined);
    assert.equal(parseAnswerBody('not json', 'application/json'), undefined);
  });
});
