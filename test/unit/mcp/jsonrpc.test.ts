import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError, type ErrorCode } from '../../../src/errors.js';
import {
  parseJsonRpcBody,
  parseJsonText,
  serializeMessage,
  serializeMessages,
  type McpMessage,
} from '../../../src/mcp/jsonrpc.js';

function rejectsWith(code: ErrorCode, detail?: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof GatewayError, `expected a GatewayError, got ${String(error)}`);
    assert.equal(error.code, code);
    if (detail) assert.match(error.detail ?? '', detail);
    return true;
  };
}

describe('parseJsonRpcBody', () => {
  it('parses a request, keeping the raw object', () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"x-ext":true}';
    const { messages, batch } = parseJsonRpcBody(Buffer.from(body));
    assert.equal(batch, false);
    assert.deepEqual(messages, [
      {
        kind: 'request',
        id: 1,
        method: 'tools/call',
        params: { name: 'echo' },
        raw: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' }, 'x-ext': true },
      },
    ]);
  });

  it('parses notifications, string ids, array params and responses', () => {
    const { messages } = parseJsonRpcBody(
      JSON.stringify([
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 'a', method: 'm', params: [1, 2] },
        { jsonrpc: '2.0', id: -3, result: null },
        { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error', data: 1 } },
      ]),
    );
    assert.deepEqual(
      messages.map(({ raw: _raw, ...rest }) => rest),
      [
        { kind: 'notification', method: 'notifications/initialized' },
        { kind: 'request', id: 'a', method: 'm', params: [1, 2] },
        { kind: 'response', id: -3, result: null },
        { kind: 'response', id: null, error: { code: -32700, message: 'Parse error', data: 1 } },
      ],
    );
  });

  it('marks a one-element array as a batch', () => {
    assert.equal(parseJsonRpcBody('[{"jsonrpc":"2.0","method":"x"}]').batch, true);
  });

  it('answers TG_ERR_PARSE for malformed JSON', () => {
    for (const body of ['', '{', '{"jsonrpc":"2.0",}', 'nope', Buffer.from([0xff, 0xfe])]) {
      assert.throws(() => parseJsonRpcBody(body), rejectsWith('TG_ERR_PARSE'));
    }
  });

  const invalid: Array<[string, unknown, RegExp]> = [
    ['a string', '"hi"', /not an object/],
    ['null', 'null', /not an object/],
    ['a number', '42', /not an object/],
    ['missing jsonrpc', { id: 1, method: 'm' }, /jsonrpc/],
    ['jsonrpc 1.0', { jsonrpc: '1.0', id: 1, method: 'm' }, /jsonrpc/],
    ['numeric jsonrpc', { jsonrpc: 2, id: 1, method: 'm' }, /jsonrpc/],
    ['method not a string', { jsonrpc: '2.0', id: 1, method: 7 }, /method/],
    ['params a string', { jsonrpc: '2.0', id: 1, method: 'm', params: 'x' }, /params/],
    ['params null', { jsonrpc: '2.0', method: 'm', params: null }, /params/],
    ['object id', { jsonrpc: '2.0', id: {}, method: 'm' }, /id/],
    ['array id', { jsonrpc: '2.0', id: [1], method: 'm' }, /id/],
    ['boolean id', { jsonrpc: '2.0', id: true, method: 'm' }, /id/],
    ['fractional id', { jsonrpc: '2.0', id: 1.5, method: 'm' }, /id/],
    ['unsafe integer id', '{"jsonrpc":"2.0","id":12345678901234567890,"method":"m"}', /id/],
    ['null request id', { jsonrpc: '2.0', id: null, method: 'm' }, /id/],
    ['method with result', { jsonrpc: '2.0', id: 1, method: 'm', result: {} }, /both/],
    ['both result and error', { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } }, /exactly one/],
    ['neither result nor error', { jsonrpc: '2.0', id: 1 }, /exactly one/],
    ['response without id', { jsonrpc: '2.0', result: {} }, /"id"/],
    ['null id with result', { jsonrpc: '2.0', id: null, result: {} }, /id/],
    ['error without code', { jsonrpc: '2.0', id: 1, error: { message: 'x' } }, /code/],
    ['error with fractional code', { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'x' } }, /code/],
    ['error not an object', { jsonrpc: '2.0', id: 1, error: 'bad' }, /code/],
    ['boolean response id', { jsonrpc: '2.0', id: false, error: { code: 1, message: 'x' } }, /id/],
    ['empty batch', [], /empty batch/],
    ['bad batch element', [{ jsonrpc: '2.0', method: 'm' }, 3], /batch element 1: message is not an object/],
    ['nested batch', [[{ jsonrpc: '2.0', method: 'm' }]], /batch element 0/],
  ];
  for (const [name, value, detail] of invalid) {
    it(`answers TG_ERR_INVALID_REQUEST for ${name}`, () => {
      const body = typeof value === 'string' ? value : JSON.stringify(value);
      assert.throws(() => parseJsonRpcBody(body), rejectsWith('TG_ERR_INVALID_REQUEST', detail));
    });
  }

  it('refuses prototype-pollution keys, however they are spelled', () => {
    for (const body of [
      '{"jsonrpc":"2.0","id":1,"method":"m","params":{"__proto__":{"admin":true}}}',
      '{"jsonrpc":"2.0","id":1,"method":"m","params":{"\\u005f_proto__":{"admin":true}}}',
      '{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[{"constructor":{"prototype":{"admin":true}}}]}}',
    ]) {
      assert.throws(() => parseJsonRpcBody(body), rejectsWith('TG_ERR_INVALID_REQUEST', /forbidden/));
    }
    assert.equal(({} as Record<string, unknown>).admin, undefined);
  });

  it('allows a harmless "constructor" key and "__proto__" inside strings', () => {
    const body = '{"jsonrpc":"2.0","id":1,"method":"m","params":{"constructor":"x","text":"\\"__proto__\\":"}}';
    assert.equal(parseJsonRpcBody(body).messages[0]?.kind, 'request');
  });

  it('parseJsonText tells malformed JSON from forbidden keys', () => {
    assert.throws(() => parseJsonText('{'), rejectsWith('TG_ERR_PARSE'));
    assert.throws(() => parseJsonText('{"__proto__":1}'), rejectsWith('TG_ERR_INVALID_REQUEST'));
    assert.equal(parseJsonText(' null '), null);
  });
});

describe('serializeMessage', () => {
  it('writes a parsed message back byte for byte, unknown fields included', () => {
    const body = '{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a"},"vendor":{"k":1}}';
    const [message] = parseJsonRpcBody(body).messages;
    assert.equal(serializeMessage(message as McpMessage), body);
  });

  it('writes changed typed fields over raw, keeping key order', () => {
    const [message] = parseJsonRpcBody('{"jsonrpc":"2.0","id":5,"result":{"a":1},"extra":true}').messages;
    assert.equal(message?.kind, 'response');
    const rewritten = { ...(message as McpMessage & { kind: 'response' }), id: 9, result: { b: 2 } };
    assert.equal(serializeMessage(rewritten), '{"jsonrpc":"2.0","id":9,"result":{"b":2},"extra":true}');
  });

  it('uses a response\'s resultText for its result, and only when the response has no other members', () => {
    const [plain] = parseJsonRpcBody('{"result":{"a":1},"id":"r","jsonrpc":"2.0"}').messages as [McpMessage & { kind: 'response' }];
    const full = serializeMessage(plain);
    plain.resultText = '{"a": 1}';
    assert.equal(serializeMessage(plain), '{"jsonrpc":"2.0","id":"r","result":{"a": 1}}');
    assert.deepEqual(JSON.parse(serializeMessage(plain)), JSON.parse(full));
    const [extra] = parseJsonRpcBody('{"jsonrpc":"2.0","id":1,"result":{"a":1},"vendor":true}').messages as [McpMessage & { kind: 'response' }];
    extra.resultText = '{"a": 1}';
    assert.equal(serializeMessage(extra), '{"jsonrpc":"2.0","id":1,"result":{"a":1},"vendor":true}', 'a member the short form would drop is kept');
  });

  it('drops members that do not belong to the new kind', () => {
    const [message] = parseJsonRpcBody('{"jsonrpc":"2.0","id":5,"method":"m","params":{},"extra":1}').messages;
    const response: McpMessage = { kind: 'response', id: 5, error: { code: -1, message: 'no' }, raw: message?.raw };
    assert.equal(serializeMessage(response), '{"jsonrpc":"2.0","id":5,"extra":1,"error":{"code":-1,"message":"no"}}');
    const notification: McpMessage = { kind: 'notification', method: 'n', raw: message?.raw };
    assert.equal(serializeMessage(notification), '{"jsonrpc":"2.0","method":"n","extra":1}');
  });

  it('writes messages built without raw', () => {
    assert.equal(
      serializeMessage({ kind: 'request', id: 1, method: 'tasks/get', params: { taskId: 't' } }),
      '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}}',
    );
    assert.equal(
      serializeMessage({ kind: 'response', id: null, error: { code: -32600, message: 'x' } }),
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}',
    );
  });

  it('does not mutate raw', () => {
    const [message] = parseJsonRpcBody('{"jsonrpc":"2.0","id":1,"result":{}}').messages;
    serializeMessage({ ...(message as McpMessage & { kind: 'response' }), id: 2 });
    assert.equal(message?.raw?.id, 1);
  });

  it('serializeMessages keeps a batch a batch', () => {
    const { messages } = parseJsonRpcBody('[{"jsonrpc":"2.0","method":"a"}]');
    assert.equal(serializeMessages(messages, true), '[{"jsonrpc":"2.0","method":"a"}]');
    assert.equal(serializeMessages(messages, false), '{"jsonrpc":"2.0","method":"a"}');
    assert.throws(() => serializeMessages([], false), TypeError);
  });
});
