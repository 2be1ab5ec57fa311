import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SnapshotCipher } from '../../../src/store/snapshot-cipher.js';

const key = (id: string) => ({ id, key: randomBytes(32).toString('base64') });

describe('SnapshotCipher', () => {
  it('opens what it sealed, for the same handle only', () => {
    const cipher = new SnapshotCipher([key('k1')]);
    const sealed = cipher.seal('{"status":"working"}', 'handle-a');
    assert.equal(cipher.open(sealed, 'handle-a'), '{"status":"working"}');
    assert.equal(cipher.open(sealed, 'handle-b'), undefined, 'the handle is bound in as associated data');
    const [id, iv, body, tag] = sealed.split('.');
    assert.equal(cipher.open([id, iv, body, tag!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))].join('.'), 'handle-a'), undefined, 'a changed tag fails');
  });

  it('draws a fresh IV for every seal, across refills of its pool', () => {
    const cipher = new SnapshotCipher([key('k1')]);
    const ivs = new Set<string>();
    const sealedOnes: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const sealed = cipher.seal(`snapshot ${i}`, 'h');
      sealedOnes.push(sealed);
      ivs.add(sealed.split('.')[1]!);
    }
    assert.equal(ivs.size, 1000);
    // Each sealed string keeps its own IV even after the pool it came from was refilled.
    sealedOnes.forEach((sealed, i) => assert.equal(cipher.open(sealed, 'h'), `snapshot ${i}`));
  });

  it('tags a snapshot by its plaintext, its handle and the sealing key, and by nothing else', () => {
    const k1 = key('k1');
    const cipher = new SnapshotCipher([k1]);
    const tag = cipher.tag('{"status":"working"}', 'handle-a');
    assert.match(tag, /^[\w-]{22}$/);
    assert.equal(cipher.tag('{"status":"working"}', 'handle-a'), tag, 'stable (unlike a seal)');
    assert.equal(new SnapshotCipher([k1]).tag('{"status":"working"}', 'handle-a'), tag, 'the same on every replica with the key');
    assert.notEqual(cipher.tag('{"status":"completed"}', 'handle-a'), tag);
    assert.notEqual(cipher.tag('{"status":"working"}', 'handle-b'), tag);
    assert.notEqual(new SnapshotCipher([key('k1')]).tag('{"status":"working"}', 'handle-a'), tag, 'keyed: not a bare hash anyone can recompute');
  });

  it('seals with the first key and opens with any configured one (rotation)', () => {
    const oldKey = key('old');
    const before = new SnapshotCipher([oldKey]).seal('kept', 'h');
    const rotated = new SnapshotCipher([key('new'), oldKey]);
    assert.equal(rotated.open(before, 'h'), 'kept');
    assert.ok(rotated.seal('x', 'h').startsWith('new.'));
    assert.equal(new SnapshotCipher([key('other')]).open(before, 'h'), undefined, 'an unknown key id opens nothing');
  });
});
