/**
 * A listener's stream (src/push/listener-stream.ts): every message tagged with the listen id,
 * the listen response at the end; one message in flight whatever its size, what waits behind it
 * bounded, and a listener that takes nothing while something waits for it cut off, with what it
 * missed counted, instead of growing the gateway's memory.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createParser } from 'eventsource-parser';
import { ListenerStream, SUBSCRIPTION_ID, type DropReason } from '../../../src/push/listener-stream.js';

function collect(stream: ListenerStream): { messages: Record<string, unknown>[]; done: Promise<void> } {
  const messages: Record<string, unknown>[] = [];
  const parser = createParser({ onEvent: (event) => messages.push(JSON.parse(event.data) as Record<string, unknown>) });
  stream.body.on('data', (chunk: Buffer) => parser.feed(chunk.toString('utf8')));
  const done = new Promise<void>((resolve) => stream.body.once('end', resolve));
  return { messages, done };
}

function openStream(maxBufferBytes: number, stallMs = 60_000) {
  const drops: DropReason[] = [];
  let closed = 0;
  const stream = new ListenerStream({ subscriptionId: 'x', maxBufferBytes, stallMs, onDrop: (reason) => drops.push(reason), onClose: () => closed++ });
  return { stream, drops, closed: () => closed };
}

describe('listener stream', () => {
  it('tags every notification with the listen id and ends with the listen response', async () => {
    let closed = 0;
    const drops: DropReason[] = [];
    const stream = new ListenerStream({ subscriptionId: 7, maxBufferBytes: 64 * 1024, stallMs: 60_000, onDrop: (reason) => drops.push(reason), onClose: () => closed++ });
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

  it('delivers a message larger than the buffer, and what waits behind it, to a listener that reads', async () => {
    const { stream, drops } = openStream(4096);
    const { messages, done } = collect(stream);
    const big = { taskId: 'h', status: 'completed', result: { text: 'x'.repeat(100_000) } };
    assert.equal(stream.notify('notifications/tasks', { taskId: 'h', status: 'working' }), true);
    assert.equal(stream.notify('notifications/tasks', big), true, 'one message in flight, whatever its size');
    assert.equal(stream.notify('notifications/tasks', { taskId: 'g', status: 'working' }), true, 'a small one waits behind it');
    stream.complete();
    await done;
    assert.deepEqual(messages.map((m) => (m.params as { status?: string } | undefined)?.status ?? 'response'), ['working', 'completed', 'working', 'response']);
    assert.deepEqual(drops, []);
  });

  it('cuts off a listener that leaves more than its buffer queued behind what it is taking', () => {
    const { stream, drops, closed } = openStream(4096);
    // Nobody reads the stream: the PassThrough fills, then the queue.
    const message = { taskId: 'h', status: 'working', statusMessage: 'x'.repeat(1000) };
    let written = 0;
    while (stream.notify('notifications/tasks', message)) written++;
    const held = stream.body.readableLength + stream.body.writableLength;
    assert.ok(written >= 16 && written <= 30, `${written} notifications written or queued`);
    assert.ok(held <= stream.body.writableHighWaterMark + stream.body.readableHighWaterMark + 1200, `${held} bytes in the PassThrough`);
    assert.deepEqual(drops, ['slow_listener']);
    assert.equal(stream.isOpen, false);
    assert.equal(closed(), 1);
    assert.equal(stream.body.destroyed, true, 'the stream is ended');
    stream.notify('notifications/tasks', message);
    assert.deepEqual(drops, ['slow_listener', 'closed']);
  });

  it('lets a writer wait for the stream, and resumes it when the listener took what was in flight', async () => {
    const { stream, drops } = openStream(4096);
    stream.notify('notifications/tasks', { taskId: 'h', status: 'completed', result: { text: 'x'.repeat(100_000) } });
    let resumed = 0;
    stream.whenWritable(() => resumed++);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(resumed, 0, 'not while the message is unread');
    const { messages } = collect(stream);
    await once(stream.body, 'drain');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(resumed, 1);
    assert.equal(messages.length, 1);
    assert.deepEqual(drops, []);
    stream.abort();
  });

  it('cuts off a listener that takes nothing for stallMs while a writer waits for it', async () => {
    const { stream, drops, closed } = openStream(4096, 50);
    stream.notify('notifications/tasks', { taskId: 'h', status: 'completed', result: { text: 'x'.repeat(100_000) } });
    let resumed = 0;
    stream.whenWritable(() => resumed++);
    // The stream's timers do not hold the process open; this bound does, and fails the test if reached.
    const closedOrBound = await Promise.race([
      new Promise((resolve) => stream.body.once('close', () => resolve('closed'))),
      new Promise((resolve) => setTimeout(resolve, 5000, 'bound')),
    ]);
    assert.equal(closedOrBound, 'closed');
    assert.deepEqual(drops, ['slow_listener']);
    assert.equal(closed(), 1);
    assert.equal(resumed, 0, 'the waiting writer is let go, not resumed');
  });

  it('does not cut off a listener that is only slow to take one message while nothing waits', async () => {
    const { stream, drops } = openStream(4096, 20);
    stream.notify('notifications/tasks', { taskId: 'h', status: 'working', statusMessage: 'x'.repeat(100_000) });
    // With nothing behind it, an unread message is no reason to cut: the close would say otherwise.
    const closedOrBound = await Promise.race([
      new Promise((resolve) => stream.body.once('close', () => resolve('closed'))),
      new Promise((resolve) => setTimeout(resolve, 200, 'bound')),
    ]);
    assert.equal(closedOrBound, 'bound');
    assert.equal(stream.isOpen, true);
    assert.deepEqual(drops, []);
    stream.abort();
  });
});
