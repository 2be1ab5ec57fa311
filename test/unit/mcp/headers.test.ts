import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import { GatewayError, type ErrorCode } from '../../../src/errors.js';
import { MODERN_VERSION } from '../../../src/mcp/era.js';
import { decodeHeaderValue, mcpNameSource, validateModernHeaders } from '../../../src/mcp/headers.js';
import type { JsonRpcNotification, JsonRpcRequest } from '../../../src/mcp/jsonrpc.js';

function rejectsWith(code: ErrorCode, detail?: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof GatewayError, String(error));
    assert.equal(error.code, code);
    if (detail) assert.match(error.detail ?? '', detail);
    return true;
  };
}

const b64 = (text: string): string => `=?base64?${Buffer.from(text, 'utf8').toString('base64')}?=`;
const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} };

function request(method: string, params: Record<string, unknown> = {}): JsonRpcRequest {
  return { kind: 'request', id: 1, method, params: { ...params, _meta: meta } };
}

function headersFor(method: string, name?: string): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': method };
  if (name !== undefined) headers['mcp-name'] = name;
  return headers;
}

describe('decodeHeaderValue', () => {
  it('passes plain visible ASCII through', () => {
    assert.equal(decodeHeaderValue('get_weather'), 'get_weather');
    assert.equal(decodeHeaderValue('file:///a b?c=d'), 'file:///a b?c=d');
    assert.equal(decodeHeaderValue(''), '');
  });

  it('drops surrounding whitespace as field parsing does', () => {
    assert.equal(decodeHeaderValue(' \tx\t '), 'x');
  });

  it('decodes the base64 sentinel as UTF-8', () => {
    assert.equal(decodeHeaderValue(b64('天気 ☀')), '天気 ☀');
    assert.equal(decodeHeaderValue(b64(' padded ')), ' padded ');
    assert.equal(decodeHeaderValue('=?base64??='), '');
    assert.equal(decodeHeaderValue(b64('=?base64?x?=')), '=?base64?x?=');
  });

  it('treats markers case-sensitively: other spellings are literal values', () => {
    assert.equal(decodeHeaderValue('=?BASE64?eA==?='), '=?BASE64?eA==?=');
    assert.equal(decodeHeaderValue('=?Base64?eA==?='), '=?Base64?eA==?=');
    assert.equal(decodeHeaderValue('=?base64?='), '=?base64?=');
  });

  it('refuses invalid base64 inside the sentinel', () => {
    for (const value of ['=?base64?eA?=', '=?base64?e A=?=', '=?base64?eA=*?=', '=?base64?eA===?=', '=?base64?-_8=?=']) {
      assert.equal(decodeHeaderValue(value), undefined, value);
    }
  });

  it('refuses invalid UTF-8 inside the sentinel', () => {
    assert.equal(decodeHeaderValue(`=?base64?${Buffer.from([0xc3, 0x28]).toString('base64')}?=`), undefined);
  });

  it('refuses characters a client must have encoded', () => {
    for (const value of ['caf\u00e9', 'a\u0000b', 'a\rb', 'a\nb', 'del\u007f', '\u00ff']) {
      assert.equal(decodeHeaderValue(value), undefined, JSON.stringify(value));
    }
  });
});

describe('mcpNameSource', () => {
  it('maps the base and tasks methods and nothing from the prototype', () => {
    assert.equal(mcpNameSource('tools/call'), 'name');
    assert.equal(mcpNameSource('prompts/get'), 'name');
    assert.equal(mcpNameSource('resources/read'), 'uri');
    assert.equal(mcpNameSource('tasks/get'), 'taskId');
    assert.equal(mcpNameSource('tasks/update'), 'taskId');
    assert.equal(mcpNameSource('tasks/cancel'), 'taskId');
    assert.equal(mcpNameSource('tools/list'), undefined);
    assert.equal(mcpNameSource('constructor'), undefined);
    assert.equal(mcpNameSource('toString'), undefined);
  });
});

describe('validateModernHeaders', () => {
  it('accepts matching headers for every Mcp-Name method', () => {
    validateModernHeaders(request('tools/call', { name: 'echo' }), headersFor('tools/call', 'echo'));
    validateModernHeaders(request('prompts/get', { name: 'p' }), headersFor('prompts/get', 'p'));
    validateModernHeaders(request('resources/read', { uri: 'file:///x' }), headersFor('resources/read', 'file:///x'));
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      validateModernHeaders(request(method, { taskId: 't-1' }), headersFor(method, 't-1'));
    }
    validateModernHeaders(request('tools/list'), headersFor('tools/list'));
  });

  it('compares the decoded sentinel with the body', () => {
    validateModernHeaders(request('tools/call', { name: '天気' }), headersFor('tools/call', b64('天気')));
    validateModernHeaders(request('tools/call', { name: 'plain' }), headersFor('tools/call', b64('plain')));
    assert.throws(
      () => validateModernHeaders(request('tools/call', { name: '天気' }), headersFor('tools/call', b64('other'))),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /^Mcp-Name header value 'other' does not match body value '天気'$/),
    );
  });

  it('refuses a mismatched Mcp-Name with the catalogue message', () => {
    const error = (() => {
      try {
        validateModernHeaders(request('tools/call', { name: 'bar' }), headersFor('tools/call', 'foo'));
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    assert.ok(error instanceof GatewayError);
    assert.equal(error.message, "Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'");
    assert.equal(error.statusIn('modern'), 400);
    assert.equal(error.rpcCode, -32020);
  });

  it('refuses a mismatched MCP-Protocol-Version or Mcp-Method', () => {
    assert.throws(
      () =>
        validateModernHeaders(request('tools/list'), { 'mcp-protocol-version': '2025-11-25', 'mcp-method': 'tools/list' }),
      rejectsWith(
        'TG_ERR_HEADER_MISMATCH',
        /^MCP-Protocol-Version header value '2025-11-25' does not match body value '2026-07-28'$/,
      ),
    );
    assert.throws(
      () => validateModernHeaders(request('tools/list'), headersFor('tools/call')),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /^Mcp-Method header value 'tools\/call' does not match body value 'tools\/list'$/),
    );
  });

  it('compares values case-sensitively', () => {
    assert.throws(
      () => validateModernHeaders(request('tools/call', { name: 'Echo' }), headersFor('tools/call', 'echo')),
      rejectsWith('TG_ERR_HEADER_MISMATCH'),
    );
  });

  it('refuses missing required headers', () => {
    assert.throws(
      () => validateModernHeaders(request('tools/list'), { 'mcp-method': 'tools/list' }),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /^MCP-Protocol-Version header is missing$/),
    );
    assert.throws(
      () => validateModernHeaders(request('tools/list'), { 'mcp-protocol-version': MODERN_VERSION }),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /^Mcp-Method header is missing$/),
    );
    for (const [method, params] of [
      ['tools/call', { name: 'x' }],
      ['resources/read', { uri: 'x' }],
      ['tasks/get', { taskId: 'x' }],
    ] as const) {
      assert.throws(
        () => validateModernHeaders(request(method, params), headersFor(method)),
        rejectsWith('TG_ERR_HEADER_MISMATCH', /^Mcp-Name header is missing$/),
      );
    }
  });

  it('refuses an Mcp-Name when the body has no value to mirror', () => {
    assert.throws(
      () => validateModernHeaders(request('tasks/get', { taskId: 7 }), headersFor('tasks/get', '7')),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /does not match body value none/),
    );
  });

  it('leaves a request without the mirrored body value and without Mcp-Name to the upstream', () => {
    validateModernHeaders(request('tools/call', {}), headersFor('tools/call'));
  });

  it('ignores Mcp-Name on methods that mirror nothing', () => {
    validateModernHeaders(request('tools/list'), headersFor('tools/list', 'anything\u00e9'));
  });

  it('refuses invalid characters, bad sentinels and multi-valued headers', () => {
    assert.throws(
      () => validateModernHeaders(request('tools/call', { name: 'é' }), headersFor('tools/call', 'é')),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /^Mcp-Name header value 'é' contains invalid characters$/),
    );
    assert.throws(
      () => validateModernHeaders(request('tools/call', { name: 'x' }), headersFor('tools/call', '=?base64?eA?=')),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /invalid characters/),
    );
    assert.throws(
      () => validateModernHeaders(request('tools/call', { name: 'x' }), { ...headersFor('tools/call'), 'mcp-name': ['x', 'x'] }),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /^Mcp-Name header must have exactly one value$/),
    );
    assert.throws(
      () => validateModernHeaders(request('tools/list'), { ...headersFor('tools/list'), 'mcp-method': ['tools/list'] }),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /Mcp-Method/),
    );
  });

  it('echoes at most 64 characters and no control characters', () => {
    const long = 'a'.repeat(100);
    assert.throws(
      () => validateModernHeaders(request('tools/call', { name: `x\u001b[31m\u202e${long}` }), headersFor('tools/call', 'y')),
      (error: unknown) => {
        assert.ok(error instanceof GatewayError);
        const detail = error.detail ?? '';
        assert.doesNotMatch(detail, /[\p{Cc}\u202e]/u);
        const echoed = /body value '([^']*)'/.exec(detail)?.[1] ?? '';
        assert.equal(echoed, `x[31m${'a'.repeat(59)}…`);
        return true;
      },
    );
  });

  it('answers TG_ERR_INVALID_PARAMS for a modern request without its version in _meta', () => {
    const bare: JsonRpcRequest = { kind: 'request', id: 1, method: 'tools/list', params: {} };
    assert.throws(
      () => validateModernHeaders(bare, headersFor('tools/list')),
      rejectsWith('TG_ERR_INVALID_PARAMS', /protocolVersion/),
    );
  });

  it('needs no headers on notifications, but holds present ones to the body', () => {
    const notification: JsonRpcNotification = { kind: 'notification', method: 'notifications/x', params: { _meta: meta } };
    validateModernHeaders(notification, {});
    validateModernHeaders({ kind: 'notification', method: 'notifications/x' }, { 'mcp-protocol-version': MODERN_VERSION });
    assert.throws(
      () => validateModernHeaders(notification, { 'mcp-method': 'notifications/y' }),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /Mcp-Method/),
    );
    assert.throws(
      () => validateModernHeaders(notification, { 'mcp-protocol-version': '2025-11-25' }),
      rejectsWith('TG_ERR_HEADER_MISMATCH', /MCP-Protocol-Version/),
    );
  });
});
