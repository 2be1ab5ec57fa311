import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { GatewayError } from '../../../src/errors.js';
import { rewriteJsonReply, rewriteJsonRpcText } from '../../../src/mcp/json-reply.js';
import type { McpMessage } from '../../../src/mcp/jsonrpc.js';

const single = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"up-1","status":"working"}},"x":true}');
const batch = Buffer.from(
  '[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"result":{}}]',
);

describe('rewriteJsonReply', () => {
  it('returns the very same buffer when the hook changes nothing', async () => {
    const seen: McpMessage[] = [];
    const out = await rewriteJsonReply(single, async (message) => {
      seen.push(message);
      return undefined;
    });
    assert.equal(out, single);
    assert.equal(seen.length, 1);
  });

  it('writes a replacement, keeping unknown members', async () => {
    const out = await rewriteJsonReply(single, async (message) =>
      message.kind === 'response' ? { ...message, result: { task: { taskId: 'gw-1', status: 'working' } } } : undefined,
    );
    assert.equal(out?.toString(), '{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"gw-1","status":"working"}},"x":true}');
  });

  it('answers null when the only message is dropped', async () => {
    assert.equal(await rewriteJsonReply(single, async () => null), null);
  });

  it('rewrites a batch per message, in order, even with a slow hook', async () => {
    const order: string[] = [];
    const out = await rewriteJsonReply(batch, async (message) => {
      await sleep(message.kind === 'response' && message.id === 1 ? 20 : 0);
      order.push(message.kind === 'notification' ? message.method : String(message.id));
      if (message.kind === 'notification') return null;
      return message.kind === 'response' && message.id === 2 ? { ...message, result: { ok: true } } : undefined;
    });
    assert.deepEqual(order, ['1', 'n', '2']);
    assert.equal(out?.toString(), '[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"ok":true}}]');
  });

  it('keeps a batch of one a batch', async () => {
    const out = await rewriteJsonReply(batch, async (message) => (message.kind === 'notification' ? undefined : null));
    assert.equal(out?.toString(), '[{"jsonrpc":"2.0","method":"n"}]');
  });

  it('answers null when a whole batch is dropped', async () => {
    assert.equal(await rewriteJsonReply(batch, async () => null), null);
  });

  it('returns a body that is not JSON-RPC unchanged, without calling the hook', async () => {
    for (const text of ['', 'not json', '{"hello":"world"}', '[]', '{"jsonrpc":"2.0","id":1}', 'null']) {
      const body = Buffer.from(text);
      const out = await rewriteJsonReply(body, async () => assert.fail('hook called'));
      assert.equal(out, body, text);
    }
  });

  it('fails closed on a reply with a forbidden key', async () => {
    const body = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"__proto__":{"admin":true}}}');
    await assert.rejects(
      rewriteJsonReply(body, async () => undefined),
      (error: unknown) => error instanceof GatewayError && error.code === 'TG_ERR_BAD_GATEWAY',
    );
  });

  it('passes a hook failure through', async () => {
    await assert.rejects(
      rewriteJsonReply(single, async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
  });
});

describe('rewriteJsonRpcText', () => {
  it('answers undefined (unchanged), null (all dropped) or the new text', async () => {
    const text = '{"jsonrpc":"2.0","method":"a"}';
    assert.equal(await rewriteJsonRpcText(text, async () => undefined), undefined);
    assert.equal(await rewriteJsonRpcText(text, async () => null), null);
    assert.equal(
      await rewriteJsonRpcText(text, async () => ({ kind: 'notification', method: 'b' })),
      '{"jsonrpc":"2.0","method":"b"}',
    );
  });
});
