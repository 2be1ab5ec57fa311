/**
 * The framer of the JSON-RPC requests the gateway makes itself (src/upstream/request-framer.ts):
 * what each era's request carries in its headers and body.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeHeaderValue } from '../../../src/mcp/headers.js';
import {
  frameLegacy,
  frameLegacyAnswer,
  frameLegacyNotification,
  frameModern,
  legacyHeaders,
  modernEnvelope,
  newRequestId,
  TASKS_CAPABILITIES,
} from '../../../src/upstream/request-framer.js';

const ID = /^taskgate-[0-9a-f-]{36}$/;

describe('frameModern', () => {
  it('mirrors the method, version and name in headers, and adds the envelope to _meta, keeping the rest', () => {
    const framed = frameModern('tasks/get', { taskId: 't-1', _meta: { progressToken: 3 } }, { capabilities: TASKS_CAPABILITIES, name: 't-1' });
    assert.match(framed.id!, ID);
    assert.deepEqual(framed.headers, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tasks/get', 'mcp-name': 't-1' });
    assert.deepEqual(framed.message, {
      jsonrpc: '2.0',
      id: framed.id,
      method: 'tasks/get',
      params: {
        taskId: 't-1',
        _meta: {
          progressToken: 3,
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'taskgate', version: '0' },
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        },
      },
    });
  });

  it('speaks the version it is given, in the header and the envelope alike', () => {
    const framed = frameModern('server/discover', {}, { version: '2026-09-01', capabilities: {} });
    assert.equal(framed.headers['mcp-protocol-version'], '2026-09-01');
    assert.equal('mcp-name' in framed.headers, false, 'no name without one to mirror');
    assert.deepEqual(framed.message.params, { _meta: modernEnvelope({}, '2026-09-01') });
  });

  it('encodes a name that is not plain ASCII (SEP-2243), so the backend decodes it back', () => {
    for (const name of ['résumé', ' padded ', '=?base64?looks-encoded?=']) {
      const header = frameModern('tools/call', { name }, { capabilities: {}, name }).headers['mcp-name']!;
      assert.match(header, /^=\?base64\?[A-Za-z0-9+/=]+\?=$/);
      assert.equal(decodeHeaderValue(header), name);
    }
    assert.equal(frameModern('tools/call', { name: 'slow_scan' }, { capabilities: {}, name: 'slow_scan' }).headers['mcp-name'], 'slow_scan');
  });

  it('leaves a _meta that is not an object out, and never changes the params it was given', () => {
    const params = { name: 'x', _meta: 'odd' };
    const framed = frameModern('tools/call', params, { capabilities: {} });
    assert.deepEqual(Object.keys((framed.message.params as { _meta: object })._meta), ['io.modelcontextprotocol/protocolVersion', 'io.modelcontextprotocol/clientInfo', 'io.modelcontextprotocol/clientCapabilities']);
    assert.deepEqual(params, { name: 'x', _meta: 'odd' });
  });
});

describe('the 2025 framings', () => {
  it('a request carries the session\'s version and id, or none before initialize agreed them', () => {
    const inSession = frameLegacy('tasks/get', { taskId: 't' }, { version: '2025-06-18', session: 's-1' });
    assert.deepEqual(inSession.headers, { 'mcp-protocol-version': '2025-06-18', 'mcp-session-id': 's-1' });
    assert.deepEqual(inSession.message, { jsonrpc: '2.0', id: inSession.id, method: 'tasks/get', params: { taskId: 't' } });
    const initialize = frameLegacy('initialize', { protocolVersion: '2025-11-25' }, {});
    assert.deepEqual(initialize.headers, {});
    assert.deepEqual(frameLegacy('x', undefined, { version: '2025-11-25', session: '' }).headers, { 'mcp-protocol-version': '2025-11-25' }, 'an empty session id is none');
  });

  it('a notification and an answer have no id of the gateway\'s', () => {
    const note = frameLegacyNotification('notifications/initialized', { version: '2025-11-25' });
    assert.equal(note.id, undefined);
    assert.deepEqual(note.message, { jsonrpc: '2.0', method: 'notifications/initialized' });
    const answer = frameLegacyAnswer('srv-1', { action: 'accept' }, { version: '2025-11-25', session: 's' });
    assert.equal(answer.id, undefined);
    assert.deepEqual(answer.message, { jsonrpc: '2.0', id: 'srv-1', result: { action: 'accept' } });
    assert.deepEqual(answer.headers, legacyHeaders({ version: '2025-11-25', session: 's' }));
  });
});

it('request ids are the gateway\'s own and never repeat', () => {
  const ids = new Set(Array.from({ length: 100 }, () => newRequestId()));
  assert.equal(ids.size, 100);
  for (const id of ids) assert.match(id, ID);
});
