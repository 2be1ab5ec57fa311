/**
 * The mcp stage as a plain function of headers and body (src/mcp/mcp-stage.ts): media types
 * checked, the body parsed once (never read if it is not valid UTF-8), the era decided, the
 * rules of that era kept, and the methods other than POST sorted out.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../../src/errors.js';
import { checkMessageRules, checkOtherMethod, parseMcpPost, sessionIdOf, upstreamSessionOf } from '../../../src/mcp/mcp-stage.js';

const LEGACY = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 't', version: '0' } };
const MODERN = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' };

/** The catalogue code a call throws with. */
function codeOf(call: () => unknown): string {
  try {
    call();
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    return error.code;
  }
  return assert.fail('no error thrown');
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('mcp stage', () => {
  it('parses a 2025 POST once: its one message, not a batch, the legacy era, the bytes kept as they came', () => {
    const body = json({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const mcp = parseMcpPost(LEGACY, body);
    assert.equal(mcp.era, 'legacy');
    assert.equal(mcp.batch, false);
    assert.equal(mcp.message?.kind, 'request');
    assert.equal(mcp.body, body);
  });

  it('decides 2026-07-28 from the body\'s _meta', () => {
    const mcp = parseMcpPost(MODERN, json({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } }));
    assert.equal(mcp.era, 'modern');
  });

  it('refuses a body that is not valid UTF-8 before anyone reads it', () => {
    const overlong = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}}')]);
    assert.equal(codeOf(() => parseMcpPost(LEGACY, overlong)), 'TG_ERR_PARSE');
    assert.equal(codeOf(() => parseMcpPost(LEGACY, undefined)), 'TG_ERR_PARSE', 'no body is no JSON');
  });

  it('checks the media types first', () => {
    assert.equal(codeOf(() => parseMcpPost({ ...LEGACY, 'content-type': 'text/plain' }, json({}))), 'TG_ERR_UNSUPPORTED_MEDIA_TYPE');
    assert.equal(codeOf(() => parseMcpPost({ ...LEGACY, accept: 'application/json' }, json({}))), 'TG_ERR_NOT_ACCEPTABLE');
  });

  it('refuses a 2026 response (there is no server request to answer) and a 2026 request whose headers do not mirror it', () => {
    const response = parseMcpPost(MODERN, json({ jsonrpc: '2.0', id: 'tg-1', result: { _meta: MODERN_META } }));
    assert.equal(response.era, 'modern');
    assert.equal(codeOf(() => checkMessageRules(response, MODERN)), 'TG_ERR_INVALID_REQUEST');
    const call = parseMcpPost(MODERN, json({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'scan', arguments: {}, _meta: MODERN_META } }));
    assert.equal(call.era, 'modern');
    assert.throws(() => checkMessageRules(call, { ...MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'other' }), GatewayError);
    assert.doesNotThrow(() => checkMessageRules(call, { ...MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'scan' }));
  });

  it('lets a 2025 GET stream and DELETE through, and answers 405 with Allow for everything else', () => {
    assert.doesNotThrow(() => checkOtherMethod('GET', { accept: 'text/event-stream' }));
    assert.doesNotThrow(() => checkOtherMethod('DELETE', {}));
    assert.equal(codeOf(() => checkOtherMethod('GET', { accept: 'application/json' })), 'TG_ERR_NOT_ACCEPTABLE');
    for (const method of ['GET', 'DELETE']) {
      try {
        checkOtherMethod(method, { accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28' });
        assert.fail(`${method} on 2026-07-28 passed`);
      } catch (error) {
        assert.ok(error instanceof GatewayError);
        assert.equal(error.code, 'TG_ERR_METHOD_NOT_ALLOWED');
        assert.deepEqual(error.headers, { allow: 'POST' });
      }
    }
    assert.equal(codeOf(() => checkOtherMethod('PUT', {})), 'TG_ERR_METHOD_NOT_ALLOWED');
  });

  it('names a 2025 session only, and prefers the one a task pinned', () => {
    assert.equal(sessionIdOf('legacy', { 'mcp-session-id': 's-1' }), 's-1');
    assert.equal(sessionIdOf('legacy', { 'mcp-session-id': '' }), undefined);
    assert.equal(sessionIdOf('modern', { 'mcp-session-id': 's-1' }), undefined);
    assert.equal(upstreamSessionOf({ sessionId: 'client' }), 'client');
    assert.equal(upstreamSessionOf({ sessionId: 'client', upstreamHeaders: { 'mcp-session-id': 'task' } }), 'task');
    assert.equal(upstreamSessionOf({ sessionId: 'client', upstreamHeaders: { 'mcp-session-id': null } }), undefined, 'pinned to none');
  });
});
