import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { Readable, type Transform } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { createParser } from 'eventsource-parser';
import { GatewayError } from '../../../src/errors.js';
import type { McpMessage } from '../../../src/mcp/jsonrpc.js';
import type { MessageRewrite } from '../../../src/mcp/json-reply.js';
import { createSseTap, serializeSseEvent, type SseEvent, type SseTapOptions } from '../../../src/mcp/sse-tap.js';

const FIXTURES = [
  'resumable-post.crlf.txt',
  'resumable-post.lf.txt',
  'field-forms.crlf.txt',
  'field-forms.lf.txt',
  'get-stream-bom.cr.txt',
];
const fixture = (name: string): Buffer => readFileSync(new URL(`../../fixtures/sse/${name}`, import.meta.url));

type Parsed =
  | { type: 'event'; id?: string; event?: string; data: string }
  | { type: 'comment'; text: string }
  | { type: 'retry'; ms: number };

/** What an SSE client would see in these bytes: the yardstick for "faithful". */
function parseAll(bytes: Buffer): Parsed[] {
  const out: Parsed[] = [];
  const parser = createParser({
    onEvent: ({ id, event, data }) => out.push({ type: 'event', id, event, data }),
    onComment: (text) => out.push({ type: 'comment', text }),
    onRetry: (ms) => out.push({ type: 'retry', ms }),
  });
  // TextDecoder drops a BOM, as an SSE client's UTF-8 decode does.
  let text = new TextDecoder().decode(bytes);
  // A final CR is a line end at the end of a stream; the parser waits for a possible LF.
  if (text.endsWith('\r')) text += '\n';
  parser.feed(text);
  return out;
}

const unchanged = async (): Promise<MessageRewrite> => undefined;

function tap(options: Partial<SseTapOptions> = {}): Transform {
  return createSseTap({ onMessage: unchanged, maxEventBytes: 64 * 1024, ...options });
}

/** Feeds the chunks through a tap; resolves with the output chunks. */
async function run(chunks: Buffer[], options: Partial<SseTapOptions> = {}): Promise<Buffer[]> {
  const stream = tap(options);
  const out: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => out.push(chunk));
  const done = once(stream, 'end');
  Readable.from(chunks).pipe(stream);
  await done;
  return out;
}

function splitAt(bytes: Buffer, points: number[]): Buffer[] {
  const chunks: Buffer[] = [];
  let start = 0;
  for (const point of [...points].sort((a, b) => a - b)) {
    chunks.push(bytes.subarray(start, point));
    start = point;
  }
  chunks.push(bytes.subarray(start));
  return chunks.filter((chunk) => chunk.length > 0);
}

/** A small seeded PRNG so a failing split can be reproduced. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('createSseTap relays fixtures faithfully', () => {
  for (const name of FIXTURES) {
    it(`${name}: whole, byte by byte and split at every boundary`, async () => {
      const bytes = fixture(name);
      const expected = parseAll(bytes);
      assert.ok(expected.length >= 4, 'the fixture parses to something');
      assert.deepEqual(parseAll(Buffer.concat(await run([bytes]))), expected);
      const bytewise = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
      assert.deepEqual(parseAll(Buffer.concat(await run(bytewise))), expected);
      for (let i = 1; i < bytes.length; i++) {
        const output = Buffer.concat(await run(splitAt(bytes, [i])));
        assert.deepEqual(parseAll(output), expected, `split at byte ${i}`);
      }
    });

    it(`${name}: many random splits`, async () => {
      const bytes = fixture(name);
      const expected = parseAll(bytes);
      const next = random(name.length);
      for (let round = 0; round < 100; round++) {
        const points = Array.from({ length: 1 + Math.floor(next() * 12) }, () => 1 + Math.floor(next() * (bytes.length - 1)));
        const output = Buffer.concat(await run(splitAt(bytes, points)));
        assert.deepEqual(parseAll(output), expected, `round ${round}, splits ${points.join(',')}`);
      }
    });
  }

  it('shows every JSON-RPC message to the hook, with its event, and no other data', async () => {
    const seen: Array<[McpMessage['kind'], SseEvent]> = [];
    await run([fixture('resumable-post.crlf.txt')], {
      onMessage: async (message, event) => {
        seen.push([message.kind, event]);
        return undefined;
      },
    });
    assert.deepEqual(
      seen.map(([kind, event]) => [kind, event.id, event.event]),
      [
        ['notification', '0_2', 'message'],
        ['request', '0_3', 'message'],
        ['response', '0_4', 'message'],
      ],
    );
  });

  it('sees multi-line JSON data and each message of a batch in data', async () => {
    const ids: unknown[] = [];
    await run([fixture('field-forms.lf.txt')], {
      onMessage: async (message) => {
        ids.push(message.kind === 'notification' ? message.method : message.id);
        return undefined;
      },
    });
    assert.deepEqual(ids, ['req-1', 'notifications/message', 1, 2]);
  });

  it('re-emits a priming event (id and empty data) and the retry before it', async () => {
    const output = Buffer.concat(await run([Buffer.from('id: 0_1\r\nretry: 500\r\ndata: \r\n\r\n')])).toString();
    assert.equal(output, 'retry: 500\n\nid: 0_1\ndata:\n\n');
  });

  it('re-emits comments as comment blocks', async () => {
    const output = Buffer.concat(await run([Buffer.from(': keepalive\n\n:\n\n:  spaced\n\n')])).toString();
    assert.equal(output, ': keepalive\n\n:\n\n:  spaced\n\n');
  });

  it('splits multi-line data into several data lines', async () => {
    const output = Buffer.concat(await run([Buffer.from('event: x\ndata: a\ndata:\ndata:  b\n\n')])).toString();
    assert.equal(output, 'event: x\ndata: a\ndata:\ndata:  b\n\n');
  });

  it('replaces the data of a message the hook rewrites, keeping id and event', async () => {
    const input = 'event: message\nid: 9\ndata: {"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"up-1"}},"x":1}\n\n';
    const output = await run([Buffer.from(input)], {
      onMessage: async (message) =>
        message.kind === 'response' ? { ...message, result: { task: { taskId: 'gw-1' } } } : undefined,
    });
    assert.equal(
      Buffer.concat(output).toString(),
      'id: 9\nevent: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"gw-1"}},"x":1}\n\n',
    );
  });

  it('drops an event whose message the hook drops, and only that one', async () => {
    const input = fixture('resumable-post.lf.txt');
    const output = await run([input], {
      onMessage: async (message) => (message.kind === 'request' ? null : undefined),
    });
    const expected = parseAll(input).filter((item) => !(item.type === 'event' && item.id === '0_3'));
    assert.deepEqual(parseAll(Buffer.concat(output)), expected);
  });

  it('drops one message of a batch and the whole event when all are dropped', async () => {
    const batch = 'data: [{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]\n\n';
    const one = await run([Buffer.from(batch)], {
      onMessage: async (message) => (message.kind === 'response' && message.id === 1 ? null : undefined),
    });
    assert.equal(Buffer.concat(one).toString(), 'data: [{"jsonrpc":"2.0","id":2,"result":{}}]\n\n');
    const none = await run([Buffer.from(batch)], { onMessage: async () => null });
    assert.equal(Buffer.concat(none).length, 0);
  });

  it('keeps order with a slow hook of random delays', async () => {
    const count = 30;
    const input = Array.from(
      { length: count },
      (_, i) => `: before ${i}\nid: ${i}\ndata: {"jsonrpc":"2.0","method":"n","params":{"i":${i}}}\n\n`,
    ).join('');
    const next = random(7);
    const output = await run(splitAt(Buffer.from(input), [50, 400, 401, 1500]), {
      onMessage: async (message) => {
        await sleep(Math.floor(next() * 5));
        return message;
      },
    });
    const parsed = parseAll(Buffer.concat(output));
    assert.deepEqual(parsed, parseAll(Buffer.from(input)));
  });

  it('waits for the hook before taking more input (backpressure)', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const stream = tap({ onMessage: async () => gate.then(() => undefined) });
    stream.resume();
    const first = stream.write('data: {"jsonrpc":"2.0","method":"a"}\n\n');
    assert.equal(first, true);
    let secondDone = false;
    stream.write('data: {"jsonrpc":"2.0","method":"b"}\n\n', () => (secondDone = true));
    await sleep(20);
    assert.equal(secondDone, false, 'the second chunk waits for the first hook');
    release();
    await sleep(20);
    assert.equal(secondDone, true);
    stream.end();
    await once(stream, 'end');
  });

  it('emits an event before the input ends', async () => {
    const stream = tap();
    stream.write('id: 1\ndata: {"jsonrpc":"2.0","method":"first"}\n\n');
    const [chunk] = (await once(stream, 'data')) as [Buffer];
    assert.equal(chunk.toString(), 'id: 1\ndata: {"jsonrpc":"2.0","method":"first"}\n\n');
    assert.equal(stream.writableEnded, false);
    stream.end('id: 2\ndata: {"jsonrpc":"2.0","method":"second"}\n\n');
    const [second] = (await once(stream, 'data')) as [Buffer];
    assert.match(second.toString(), /second/);
  });

  it('destroys the stream with TG_ERR_BAD_GATEWAY when an event outgrows maxEventBytes', async () => {
    const oversized = [
      `data: ${'x'.repeat(200)}`, // one unfinished line
      `data: ${'x'.repeat(60)}\ndata: ${'y'.repeat(60)}\n`, // data lines adding up
      `event: ${'e'.repeat(200)}`,
    ];
    for (const input of oversized) {
      const stream = tap({ maxEventBytes: 100 });
      const out: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => out.push(chunk));
      stream.write(': ok\n\ndata: small\n\n');
      stream.write(input);
      const [error] = (await once(stream, 'error')) as [unknown];
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'TG_ERR_BAD_GATEWAY');
      assert.equal(stream.destroyed, true);
      assert.equal(Buffer.concat(out).toString(), ': ok\n\ndata: small\n\n', 'complete events before it still went out');
    }
  });

  it('refuses an oversized event that arrives whole in one chunk, counted in UTF-8 bytes', async () => {
    const cases = [
      { event: `data: ${'x'.repeat(101)}\n\n`, over: true },
      { event: `data: ${'€'.repeat(34)}\n\n`, over: true }, // 34 characters, 102 bytes
      { event: `id: ${'i'.repeat(60)}\nevent: ${'e'.repeat(30)}\ndata: ${'d'.repeat(20)}\n\n`, over: true },
      { event: `data: ${'€'.repeat(33)}\n\n`, over: false }, // 99 bytes
      { event: `data: ${'x'.repeat(100)}\n\n`, over: false },
    ];
    for (const { event, over } of cases) {
      const stream = tap({ maxEventBytes: 100 });
      const out: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => out.push(chunk));
      // One chunk: the events before it, the one measured, and one after it.
      stream.end(`data: before\n\n${event}data: after\n\n`);
      if (over) {
        const [error] = (await once(stream, 'error')) as [unknown];
        assert.ok(error instanceof GatewayError && error.code === 'TG_ERR_BAD_GATEWAY', event);
        assert.equal(Buffer.concat(out).toString(), 'data: before\n\n', 'what came before went out; nothing from it on');
      } else {
        await once(stream, 'end');
        assert.equal(parseAll(Buffer.concat(out)).length, 3, event);
      }
    }
  });

  it('lets any number of small events through under the limit', async () => {
    const input = Buffer.from('data: 0123456789\n\n'.repeat(1000));
    const output = await run(splitAt(input, [5000, 10000]), { maxEventBytes: 32 });
    assert.equal(parseAll(Buffer.concat(output)).length, 1000);
  });

  it('fails the stream when the hook rejects', async () => {
    const stream = tap({ onMessage: async () => Promise.reject(new Error('hook failed')) });
    stream.resume();
    stream.write('data: {"jsonrpc":"2.0","method":"a"}\n\n');
    const [error] = (await once(stream, 'error')) as [Error];
    assert.equal(error.message, 'hook failed');
  });

  it('stops quietly when destroyed while a hook is pending', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const stream = tap({ onMessage: async () => gate.then(() => undefined) });
    const out: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => out.push(chunk));
    stream.write('data: {"jsonrpc":"2.0","method":"a"}\n\ndata: {"jsonrpc":"2.0","method":"b"}\n\n');
    await sleep(5);
    stream.destroy();
    release();
    await sleep(10);
    assert.equal(out.length, 0);
  });

  it('fails closed on an event whose JSON holds a forbidden key', async () => {
    const stream = tap();
    stream.resume();
    stream.write('data: {"jsonrpc":"2.0","id":1,"result":{"__proto__":{"x":1}}}\n\n');
    const [error] = (await once(stream, 'error')) as [unknown];
    assert.ok(error instanceof GatewayError);
    assert.equal(error.code, 'TG_ERR_BAD_GATEWAY');
  });

  it('rejects a limit that is not a positive integer', () => {
    assert.throws(() => tap({ maxEventBytes: 0 }), TypeError);
    assert.throws(() => tap({ maxEventBytes: 1.5 }), TypeError);
  });
});

describe('serializeSseEvent', () => {
  it('writes id, event, retry and one data line per line', () => {
    assert.equal(
      serializeSseEvent({ id: '1', event: 'message', retry: 500, data: 'a\nb\r\nc\rd' }),
      'id: 1\nevent: message\nretry: 500\ndata: a\ndata: b\ndata: c\ndata: d\n\n',
    );
    assert.equal(serializeSseEvent({ data: '' }), 'data:\n\n');
    assert.equal(serializeSseEvent({ id: '', data: 'x' }), 'id:\ndata: x\n\n');
  });

  it('round-trips through eventsource-parser', () => {
    const event = { id: 'e-1', event: 'message', data: ' leading\n\ntrailing ' };
    assert.deepEqual(parseAll(Buffer.from(serializeSseEvent(event))), [{ type: 'event', ...event }]);
  });

  it('refuses fields that would break the framing', () => {
    assert.throws(() => serializeSseEvent({ id: 'a\nb', data: '' }), TypeError);
    assert.throws(() => serializeSseEvent({ event: 'a\rb', data: '' }), TypeError);
    assert.throws(() => serializeSseEvent({ retry: -1, data: '' }), TypeError);
  });
});
