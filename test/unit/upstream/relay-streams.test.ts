/**
 * The two ways an upstream reply's body moves on: read whole within a limit, or piped to the
 * client with stream.pipeline's outcomes (without its per-call AbortController).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { readBounded, relayThrough } from '../../../src/upstream/relay-streams.js';

describe('readBounded', () => {
  it('collects a body in chunks, up to and including the limit', async () => {
    assert.equal((await readBounded(Readable.from([Buffer.from('ab'), 'cd']), 4)).toString(), 'abcd');
  });

  it('refuses a body over the limit and stops reading it', async () => {
    const source = Readable.from([Buffer.alloc(3), Buffer.alloc(3), Buffer.alloc(3)]);
    await assert.rejects(readBounded(source, 5), /exceeds 5 bytes/);
    assert.equal(source.destroyed, true);
  });

  it('fails when the stream closes before its end, and passes on a stream error', async () => {
    const cut = new PassThrough();
    const reading = readBounded(cut, 100);
    cut.write('partial');
    cut.destroy();
    await assert.rejects(reading, /closed before its end/);
    const broken = new PassThrough();
    const failing = readBounded(broken, 100);
    broken.destroy(new Error('reset'));
    await assert.rejects(failing, /reset/);
  });
});

/** An upstream side piped to a client side by relayThrough, and the errors it reported. */
function relayed(drainAfterTarget = false): { source: PassThrough; target: PassThrough; errors: Error[] } {
  const source = new PassThrough();
  const target = new PassThrough();
  const errors: Error[] = [];
  relayThrough(source, target, (error) => errors.push(error), drainAfterTarget);
  return { source, target, errors };
}

describe('relayThrough', () => {
  it('moves everything and ends the target when the source ends, reporting nothing', async () => {
    const { source, target, errors } = relayed();
    const got: Buffer[] = [];
    target.on('data', (chunk: Buffer) => got.push(chunk));
    source.end('one two');
    await once(target, 'end');
    assert.equal(Buffer.concat(got).toString(), 'one two');
    assert.deepEqual(errors, []);
  });

  it('an upstream error destroys the client side with it, reported once', async () => {
    const { source, target, errors } = relayed();
    target.resume();
    source.destroy(new Error('upstream reset'));
    const [error] = (await once(target, 'error')) as [Error];
    assert.equal(error.message, 'upstream reset');
    assert.equal(target.destroyed, true);
    assert.deepEqual(errors.map((e) => e.message), ['upstream reset']);
  });

  it('an upstream that closes without an end or an error cuts the client side', async () => {
    const { source, target, errors } = relayed();
    target.resume();
    source.write('half');
    source.destroy();
    const [error] = (await once(target, 'error')) as [Error];
    assert.match(error.message, /closed before its end/);
    assert.equal(target.destroyed, true);
    assert.deepEqual(errors, [error]);
  });

  it('a client side that closes (the client left) destroys the upstream, reporting nothing', async () => {
    const { source, target, errors } = relayed();
    target.destroy();
    await once(source, 'close');
    assert.equal(source.destroyed, true);
    assert.deepEqual(errors, []);
  });

  it('a held call: a client side that closes leaves the upstream to be read to its end', async () => {
    const { source, target, errors } = relayed(true);
    source.write('before');
    target.destroy();
    await once(target, 'close');
    assert.equal(source.destroyed, false, 'the upstream is not cut');
    // More than the stream buffers: only a source that is read takes it all and ends.
    source.end(Buffer.alloc(1 << 20));
    await once(source, 'end');
    assert.deepEqual(errors, []);
  });

  it('a second error on either side finds a listener (no uncaught exception)', () => {
    const { source, target } = relayed();
    assert.doesNotThrow(() => {
      source.emit('error', new Error('first'));
      source.emit('error', new Error('second'));
      target.emit('error', new Error('third'));
    });
  });
});
