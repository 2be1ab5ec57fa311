import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { patchJsonString } from '../../../src/mcp/jsonrpc.js';

const HANDLE = 'AbCdEfGhIjKlMnOpQrStUvWxYz012_-9';

function patch(text: string, to = 'backend-7'): string | undefined {
  const body = Buffer.from(text, 'utf8');
  return patchJsonString(body, JSON.parse(text), HANDLE, to)?.toString('utf8');
}

describe('patchJsonString (a task id patched into the bytes a client sent)', () => {
  it('replaces the one string and keeps every other byte, whitespace and members included', () => {
    const text = `{"jsonrpc":"2.0", "id":7,"method":"tasks/get","params":{"taskId":"${HANDLE}","_meta":{"note":"a: b", "x":[1,{"y":"é"}]}}}`;
    const out = patch(text, 'id "quoted"');
    assert.equal(out, text.replace(`"${HANDLE}"`, '"id \\"quoted\\""'));
    assert.equal((JSON.parse(out!) as { params: { taskId: string } }).params.taskId, 'id "quoted"');
  });

  it('refuses a body with a duplicate key, which a backend might read differently', () => {
    assert.equal(patch(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"other-task","taskId":"${HANDLE}"}}`), undefined);
    assert.equal(patch(`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","method":"tasks/get","params":{"taskId":"${HANDLE}"}}`), undefined);
  });

  it('refuses a body with any escape, or with the handle more than once', () => {
    assert.equal(patch(`{"jsonrpc":"2.0","id":"a\\u0062","method":"tasks/get","params":{"taskId":"${HANDLE}"}}`), undefined);
    assert.equal(patch(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"${HANDLE}","_meta":{"k":"${HANDLE}"}}}`), undefined);
    assert.equal(patch(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x${HANDLE}"}}`), undefined);
  });

  it('refuses what is not a handle-shaped value', () => {
    const text = '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"a\\"b"}}';
    assert.equal(patchJsonString(Buffer.from(text), JSON.parse(text), 'a"b', 'x'), undefined);
  });
});
