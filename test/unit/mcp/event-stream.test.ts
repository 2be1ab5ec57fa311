/**
 * The gateway's reader of event streams it consumes itself (src/mcp/event-stream.ts): what it
 * reads of the wire fixtures whatever the chunking (the same as the SSE tap would relay, as an
 * SSE client would parse it), its bound on an event, stopping, and the answers read whole.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { createParser } from 'eventsource-parser';
import { GatewayError } from '../../../src/errors.js';
import {
  eventDataOf,
  jsonObjectOf,
  readEventStream,
  readJsonRpcEvents,
  rpcAnswerOf,
  rpcResponseOf,
} from '../../../src/mcp/event-stream.js';
import type { McpMessage } from '../../../src/mcp/jsonrpc.js';

const FIXTURES = ['resumable-post.crlf.txt', 'resumable-post.lf.txt', 'field-forms.crlf.txt', 'field-forms.lf.txt', 'get-stream-bom.cr.txt'];
const fixture = (name: string): Buffer => readFileSync(new URL(`../../fixtures/sse/${name}`, import.meta.url));

/** Each event's data as an SSE client reads these bytes whole: the yardstick. */
function dataOf(bytes: Buffer): string[] {
  const out: string[] = [];
  const parser = createParser({ onEvent: (event) => out.push(event.data) });
  let text = new TextDecoder().decode(bytes);
  if (text.endsWith('\r')) text += '\n';
  parser.feed(text);
  return out;
}

async function read(chunks: readonly Buffer[], maxEventBytes = 64 * 1024): Promise<string[]> {
  const out: string[] = [];
  await readEventStream(Readable.from(chunks), maxEventBytes, (data) => void out.push(data));
  return out;
}

describe('readEventStream', () => {
  for (const name of FIXTURES) {
    it(`${name}: the same events whole, byte by byte and split at every boundary`, async () => {
      const bytes = fixture(name);
      const expected = dataOf(bytes);
      assert.ok(expected.length > 0);
      assert.deepEqual(await read([bytes]), expected);
      assert.deepEqual(await read([...bytes].map((byte) => Buffer.from([byte]))), expected);
      for (let at = 1; at < bytes.length; at++) assert.deepEqual(await read([bytes.subarray(0, at), bytes.subarray(at)]), expected, `split at byte ${at}`);
    });
  }

  it('waits for each event before the next, and stops once the reader says so', async () => {
    const seen: string[] = [];
    const stream = Readable.from([Buffer.from('data: a\n\ndata: b\n\ndata: c\n\n')]);
    await readEventStream(stream, 1024, async (data) => {
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(data);
      return data === 'b';
    });
    assert.deepEqual(seen, ['a', 'b']);
    assert.equal(stream.destroyed, true, 'the rest of the stream is let go');
  });

  it('does not read an event the stream ends in the middle of', async () => {
    assert.deepEqual(await read([Buffer.from('data: whole\n\ndata: cut')]), ['whole']);
  });

  it('fails past the event limit, whole in one chunk or growing across chunks, after the events before it', async () => {
    const big = `data: ${'x'.repeat(200)}\n\n`;
    const seen: string[] = [];
    const whole = readEventStream(Readable.from([Buffer.from(`data: small\n\n${big}`)]), 100, (data) => void seen.push(data));
    await assert.rejects(whole, (error: unknown) => error instanceof GatewayError && error.code === 'TG_ERR_BAD_GATEWAY' && /size limit/.test(error.detail ?? ''));
    assert.deepEqual(seen, ['small']);
    const split = [...Buffer.from(big)].map((byte) => Buffer.from([byte]));
    await assert.rejects(read(split, 100), /size limit|TG_ERR_BAD_GATEWAY/);
    // The limit counts UTF-8 bytes: 40 three-byte characters are 120 bytes.
    await assert.rejects(read([Buffer.from(`data: ${'日'.repeat(40)}\n\n`)], 100));
    assert.deepEqual(await read([Buffer.from(`data: ${'日'.repeat(33)}\n\n`)], 100), ['日'.repeat(33)]);
  });

  it('rejects with the stream\'s own error when it breaks', async () => {
    const broken = new Readable({ read() {} });
    const reading = readEventStream(broken, 1024, () => undefined);
    broken.push('data: one\n\n');
    setImmediate(() => broken.destroy(new Error('reset')));
    await assert.rejects(reading, /reset/);
  });
});

describe('readJsonRpcEvents', () => {
  it('reads the JSON-RPC messages of the events, a batch in order, passing over what is not JSON-RPC', async () => {
    const messages: McpMessage[] = [];
    await readJsonRpcEvents(Readable.from([fixture('field-forms.lf.txt')]), 64 * 1024, (message) => void messages.push(message));
    assert.equal(messages[0]?.kind, 'response');
    assert.equal(messages[0]?.kind === 'response' && messages[0].id, 'req-1');
    assert.ok(messages.some((message) => message.kind === 'notification' && message.method === 'notifications/message'));
  });

  it('reads the rest of the event it was told to stop in, and no further', async () => {
    const ids: unknown[] = [];
    const batch = '[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]';
    const text = `data: ${batch}\n\ndata: {"jsonrpc":"2.0","id":3,"result":{}}\n\n`;
    await readJsonRpcEvents(Readable.from([Buffer.from(text)]), 1024, (message) => {
      ids.push(message.kind === 'response' ? message.id : undefined);
      return true;
    });
    assert.deepEqual(ids, [1, 2]);
  });

  it('fails on a forbidden key, as the tap does', async () => {
    const text = 'data: {"jsonrpc":"2.0","id":1,"result":{"__proto__":{"x":1}}}\n\n';
    await assert.rejects(readJsonRpcEvents(Readable.from([Buffer.from(text)]), 1024, () => undefined), (error: unknown) => error instanceof GatewayError && error.code === 'TG_ERR_BAD_GATEWAY');
  });
});

describe('answers read whole', () => {
  const stream = 'id: 1\ndata:\n\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\nevent: message\ndata: {"jsonrpc":"2.0","id":"a","result":{"n":1}}\n\n';

  it('eventDataOf reads a last event that lacks only its blank line: the answer has ended', () => {
    assert.deepEqual(eventDataOf('data: a\n\ndata: b'), ['a', 'b']);
    assert.deepEqual(eventDataOf('data: a\n\n'), ['a']);
  });

  it('rpcResponseOf finds the first JSON-RPC response of a JSON body or a stream', () => {
    assert.deepEqual(rpcResponseOf('{"jsonrpc":"2.0","id":"a","result":{"ok":true}}', 'application/json')?.result, { ok: true });
    assert.deepEqual(rpcResponseOf(stream, 'text/event-stream; charset=utf-8')?.result, { n: 1 });
    assert.equal(rpcResponseOf('{"jsonrpc":"2.0","id":"a","error":{"code":"x","message":"m"}}', 'application/json'), undefined, 'not a JSON-RPC error object');
    assert.equal(rpcResponseOf(undefined, 'application/json'), undefined);
    assert.equal(rpcResponseOf('not json', 'application/json'), undefined);
  });

  it('rpcAnswerOf reads any JSON object of a body, and the first event with a result or an error', () => {
    assert.deepEqual(rpcAnswerOf('{"result":{"status":"working"}}', 'application/json'), { result: { status: 'working' } });
    assert.deepEqual(rpcAnswerOf(stream, 'text/event-stream'), { jsonrpc: '2.0', id: 'a', result: { n: 1 } });
    assert.deepEqual(rpcAnswerOf('data: {"jsonrpc":"2.0","id":"a","error":{"code":"x","message":"m"}}', 'text/event-stream')?.error, { code: 'x', message: 'm' });
    assert.equal(rpcAnswerOf('[1,2]', 'application/json'), undefined);
    assert.equal(rpcAnswerOf(undefined, 'text/event-stream'), undefined);
  });

  it('jsonObjectOf refuses forbidden keys and anything but an object', () => {
    assert.deepEqual(jsonObjectOf('{"a":1}'), { a: 1 });
    assert.equal(jsonObjectOf('{"__proto__":{"polluted":true}}'), undefined);
    assert.equal(jsonObjectOf('"text"'), undefined);
    assert.equal(jsonObjectOf('{'), undefined);
  });
});
