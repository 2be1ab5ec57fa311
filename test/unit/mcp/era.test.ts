import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError, type ErrorCode } from '../../../src/errors.js';
import {
  claimedProtocolVersion,
  decideEra,
  declaresTasksExtension,
  isModernVersion,
  MODERN_VERSION,
  TASKS_EXTENSION,
} from '../../../src/mcp/era.js';
import { parseJsonRpcBody, type JsonRpcRequest } from '../../../src/mcp/jsonrpc.js';

function rejectsWith(code: ErrorCode, detail?: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof GatewayError);
    assert.equal(error.code, code);
    if (detail) assert.match(error.detail ?? '', detail);
    return true;
  };
}

function request(params?: Record<string, unknown>, method = 'tools/call'): JsonRpcRequest {
  return params === undefined ? { kind: 'request', id: 1, method } : { kind: 'request', id: 1, method, params };
}

function modernRequest(extra: Record<string, unknown> = {}): JsonRpcRequest {
  return request({
    name: 'echo',
    _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} },
    ...extra,
  });
}

describe('isModernVersion', () => {
  it('compares date-shaped versions lexically', () => {
    assert.equal(isModernVersion('2026-07-28'), true);
    assert.equal(isModernVersion('2027-01-01'), true);
    assert.equal(isModernVersion('2025-11-25'), false);
    assert.equal(isModernVersion('2026-07-27'), false);
  });

  it('refuses anything that is not a date string', () => {
    for (const value of ['zzzz', '2026-7-28', '2026-07-28x', ' 2026-07-28', '', 20260728, undefined, null]) {
      assert.equal(isModernVersion(value), false, String(value));
    }
  });
});

describe('decideEra', () => {
  it('is modern when the body claims 2026-07-28 in _meta', () => {
    assert.equal(decideEra([modernRequest()], {}, false), 'modern');
  });

  it('is modern when a later revision is claimed', () => {
    const message = request({ _meta: { 'io.modelcontextprotocol/protocolVersion': '2027-03-01' } });
    assert.equal(decideEra([message], {}, false), 'modern');
  });

  it('is modern when only the header names a modern version (the header check then refuses it)', () => {
    assert.equal(decideEra([request({ name: 'x' })], { 'mcp-protocol-version': '2026-07-28' }, false), 'modern');
  });

  it('follows the body over a legacy header', () => {
    assert.equal(decideEra([modernRequest()], { 'mcp-protocol-version': '2025-11-25' }, false), 'modern');
  });

  it('is legacy for initialize, sessions, old headers or nothing at all', () => {
    const init = request({ protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }, 'initialize');
    assert.equal(decideEra([init], {}, false), 'legacy');
    assert.equal(decideEra([request({ name: 'x' })], { 'mcp-session-id': 'abc' }, false), 'legacy');
    assert.equal(decideEra([request({ name: 'x' })], { 'mcp-protocol-version': '2025-11-25' }, false), 'legacy');
    assert.equal(decideEra([request()], {}, false), 'legacy');
  });

  it('is legacy for an old or malformed claim in _meta', () => {
    for (const version of ['2025-11-25', 'latest', 20260728]) {
      const message = request({ _meta: { 'io.modelcontextprotocol/protocolVersion': version } });
      assert.equal(decideEra([message], {}, false), 'legacy');
    }
  });

  it('ignores a multi-valued MCP-Protocol-Version', () => {
    assert.equal(decideEra([request()], { 'mcp-protocol-version': ['2026-07-28', '2026-07-28'] }, false), 'legacy');
  });

  it('ignores _meta on responses', () => {
    const { messages } = parseJsonRpcBody(
      '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}',
    );
    assert.equal(decideEra(messages, {}, false), 'legacy');
  });

  describe('batches', () => {
    const batch = parseJsonRpcBody('[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"n"}]');

    it('are allowed for 2025-03-26, explicit or assumed', () => {
      assert.equal(decideEra(batch.messages, { 'mcp-protocol-version': '2025-03-26' }, true), 'legacy');
      assert.equal(decideEra(batch.messages, {}, true), 'legacy');
    });

    it('are refused from 2025-06-18 on', () => {
      for (const version of ['2025-06-18', '2025-11-25']) {
        assert.throws(
          () => decideEra(batch.messages, { 'mcp-protocol-version': version }, true),
          rejectsWith('TG_ERR_BATCH_NOT_ALLOWED', /2025-06-18/),
        );
      }
    });

    it('are refused for a modern header or a modern element', () => {
      assert.throws(
        () => decideEra(batch.messages, { 'mcp-protocol-version': MODERN_VERSION }, true),
        rejectsWith('TG_ERR_BATCH_NOT_ALLOWED', /2026-07-28/),
      );
      assert.throws(() => decideEra([modernRequest()], {}, true), rejectsWith('TG_ERR_BATCH_NOT_ALLOWED'));
    });

    it('counts a one-element array as a batch', () => {
      const single = parseJsonRpcBody('[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]');
      assert.throws(
        () => decideEra(single.messages, { 'mcp-protocol-version': '2025-11-25' }, single.batch),
        rejectsWith('TG_ERR_BATCH_NOT_ALLOWED'),
      );
    });

    it('are refused for a garbage or multi-valued version header', () => {
      for (const header of ['garbage', ['2025-03-26', '2025-03-26']]) {
        assert.throws(
          () => decideEra(batch.messages, { 'mcp-protocol-version': header }, true),
          rejectsWith('TG_ERR_BATCH_NOT_ALLOWED'),
        );
      }
    });

    it('may not carry initialize', () => {
      const withInit = parseJsonRpcBody(
        '[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}]',
      );
      assert.throws(() => decideEra(withInit.messages, {}, true), rejectsWith('TG_ERR_BATCH_NOT_ALLOWED', /initialize/));
    });
  });
});

describe('claimedProtocolVersion', () => {
  it('reads _meta only when params and _meta are objects', () => {
    assert.equal(claimedProtocolVersion(modernRequest()), MODERN_VERSION);
    assert.equal(claimedProtocolVersion(request()), undefined);
    assert.equal(claimedProtocolVersion({ kind: 'request', id: 1, method: 'm', params: [1] }), undefined);
    assert.equal(claimedProtocolVersion(request({ _meta: 'x' })), undefined);
    assert.equal(claimedProtocolVersion(request({ _meta: { 'io.modelcontextprotocol/protocolVersion': 1 } })), undefined);
  });
});

describe('declaresTasksExtension', () => {
  const withCapabilities = (capabilities: unknown): JsonRpcRequest =>
    request({
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
        'io.modelcontextprotocol/clientCapabilities': capabilities,
      },
    });

  it('is true for extensions["io.modelcontextprotocol/tasks"]: {}', () => {
    assert.equal(TASKS_EXTENSION, 'io.modelcontextprotocol/tasks');
    assert.equal(declaresTasksExtension(withCapabilities({ extensions: { [TASKS_EXTENSION]: {} } })), true);
  });

  it('is false when absent or not an object', () => {
    assert.equal(declaresTasksExtension(modernRequest()), false);
    assert.equal(declaresTasksExtension(request()), false);
    assert.equal(declaresTasksExtension(withCapabilities(undefined)), false);
    assert.equal(declaresTasksExtension(withCapabilities({ extensions: { [TASKS_EXTENSION]: true } })), false);
    assert.equal(declaresTasksExtension(withCapabilities({ extensions: { [TASKS_EXTENSION]: null } })), false);
    assert.equal(declaresTasksExtension(withCapabilities({ extensions: { [TASKS_EXTENSION]: [] } })), false);
    assert.equal(declaresTasksExtension(withCapabilities({ extensions: [] })), false);
    // 2025-11-25 capabilities live elsewhere and do not count for the extension.
    assert.equal(declaresTasksExtension(withCapabilities({ tasks: {} })), false);
  });
});
