/**
 * A listener's stream (src/push/listener-stream.ts): every message tagged with the listen id,
 * the listen response at the end, and a listener that leaves more than its buffer unread cut
 * off, with what it missed counted, instead of growing the gateway's memory.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createParser } from 'eventsource-parser';
import { ListenerStream, SUBSCRIPTION_ID, type DropReason } from '../../../src/push/listener-stream.js';

function collect(stream: ListenerStream): { messages: Record<string, unknown>[]; done: Promise<void> } {
  const messages: Record<string, unknown>[] = [];
  const parser = createParser({ onEvent: (event) => messages.push(JSON.parse(event.data) as Record<string, unknown>) });
  stream.body.on('data', (chunk: Buffer) => parser.feed(chunk.toString('utf8')));
  const done = new Promise<void>((resolve) => stream.body.once('end', resolve));
  return { messages, done };
}

describe('listener stream', () => {
  it('tags every notification with the listen id and ends with the listen response', async () => {
    let closed = 0;
    const drops: DropReason[] = [];
    const stream = new ListenerStream({ subscriptionId: 7, maxBufferBytes: 64 * 1024, onDrop: (reason) => drops.push(reason), onClose: () => closed++ });
    const { messages, done } = collect(stream);
    assert.equal(stream.notify('notifications/tasks', { taskId: 'h', status: 'working', _meta: { other: 1 } }), true);
    stream.complete();
    await done;
    assert.deepEqual(messages, [
      { jsonrpc: '2.0', method: 'notifications/tasks', params: { taskId: 'h', status: 'working', _meta: { other: 1, [SUBSCRIPTION_ID]: 7 } } },
      { jsonrpc: '2.0', id: 7, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 7 } } },
    ]);
    assert.equal(closed, 1);
    assert.deepEqual(drops, []);
    assert.equal(stream.notify('notifications/tasks', {}), false, 'nothing is written after the end');
    assert.deepEqual(drops, ['closed']);
  });

  it('cuts off a listener that leaves more than its buffer unread, and counts what it missed', () => {
    const drops: DropReason[] = [];
    let closed = 0;
    const stream = new ListenerStream({ subscriptionId: 'x', maxBufferBytes: 4096, onDrop: (reason) => drops.push(reason), onClose: () => closed++ });
    // Nobody reads the stream: what is written stays in its buffer.
    const big = { taskId: 'h', status: 'working', statusMessage: 'x'.repeat(1000) };
    let written = 0;
    while (stream.notify('notifications/tasks', big)) written++;
    assert.ok(written >= 3 && written <= 4, `${written} notifications fit in 4 KiB`);
    assert.ok(stream.body.readableLength + stream.body.writableLength <= 4096, 'never more than the limit held');
    assert.deepEqual(drops, ['slow_listener']);
    assert.equal(stream.isOpen, false);
    assert.equal(closed, 1);
    assert.equal(stream.body.destroyed, true, 'the stream is ended');
    stream.notify('notifications/tasks', big);
    assert.deepEqual(drops, ['slow_listener', 'closed']);
  });
});
