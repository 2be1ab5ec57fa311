// The relayed GET stream the gateway adds its status events to: events land between the
// backend's, never inside one; a client that does not read never makes it hold more than the cap.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import { createSseTap } from '../../../../src/mcp/sse-tap.js';
import { MAX_PENDING_BYTES, SessionOutput } from '../../../../src/provided/legacy-push/session-output.js';

const tapOf = () => createSseTap({ maxEventBytes: 1 << 20, onMessage: async () => undefined });

describe('SessionOutput', () => {
  it('writes its own events between the backend\'s, never inside one, and without an id', async () => {
    const tap = tapOf();
    const output = new SessionOutput(tap);
    const events: { id?: string; data: string }[] = [];
    const parser = createParser({ onEvent: ({ id, data }) => events.push({ id, data }) });
    output.stream.on('data', (chunk: Buffer) => parser.feed(chunk.toString('utf8')));

    const backend = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(100) } });
    const bytes = `id: 7\nevent: message\ndata: ${backend}\n\n`;
    tap.write(bytes.slice(0, 40));
    await tick();
    assert.equal(output.write({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { taskId: 't' } }), true);
    tap.write(bytes.slice(40));
    tap.end();
    await once(output.stream, 'end');

    assert.deepEqual(events, [
      { id: undefined, data: '{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t"}}' },
      { id: '7', data: backend },
    ]);
  });

  it('drops its events once the client is over the cap behind, and after the stream closed', async () => {
    const output = new SessionOutput(tapOf());
    const message = { jsonrpc: '2.0', method: 'notifications/tasks/status', params: { taskId: 'x'.repeat(200) } };
    let written = 0;
    while (output.write(message)) written++;
    const held = output.stream.writableLength + output.stream.readableLength;
    assert.ok(held <= MAX_PENDING_BYTES + 512, `held ${held} bytes`);
    assert.ok(written > 10, 'it wrote until the cap');
    assert.equal(output.write(message), false);

    output.stream.destroy();
    await once(output.stream, 'close');
    assert.equal(output.write(message), false);
  });

  it('closes the backend\'s side when the client leaves', async () => {
    const tap = tapOf();
    const output = new SessionOutput(tap);
    output.stream.destroy();
    await once(tap, 'close');
    assert.equal(tap.destroyed, true);
  });
});
