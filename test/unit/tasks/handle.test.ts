import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayError } from '../../../src/errors.js';
import { isHandleShaped, isServerRequestId, mintHandle, mintServerRequestId } from '../../../src/tasks/handle.js';
import { decodeCursor, encodeCursor } from '../../../src/tasks/task-list.js';

describe('handles and cursors', () => {
  it('mints unguessable handles and recognises their shape only', () => {
    const a = mintHandle();
    assert.ok(isHandleShaped(a));
    assert.notEqual(a, mintHandle());
    assert.equal(Buffer.from(a, 'base64url').length, 24);
    assert.ok(!isHandleShaped('786512e2-9e0d-44bd-8f29-789f320fe840'));
    assert.ok(!isHandleShaped(42));
    assert.ok(isServerRequestId(mintServerRequestId()));
    assert.ok(!isServerRequestId(0));
  });

  it('round-trips a list cursor and refuses anything else with -32602', () => {
    const position = { createdAt: 1_700_000_000_000, handle: mintHandle() };
    assert.deepEqual(decodeCursor(encodeCursor(position)), position);
    for (const bad of ['', 'nope', 7, Buffer.from('[1]').toString('base64url'), 'x'.repeat(300)]) {
      assert.throws(() => decodeCursor(bad), (e: unknown) => e instanceof GatewayError && e.rpcCode === -32602);
    }
  });
});
