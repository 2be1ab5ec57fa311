/**
 * The Redis store's key names (src/store/redis-keys.ts): what one script changes together
 * shares a Cluster hash slot, what a client or backend chose never shapes a key, owners' lists
 * sort newest first by their bytes alone, and every key lives a little past its task.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { handleOfListMember, listMember, ownKeys, pxTtl, RedisKeys, taskKeyTtl } from '../../../src/store/redis-keys.js';

const keys = new RedisKeys('tg:');

/** The hash tag Redis Cluster slots a key by: the text of its first {…}, when not empty. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
}

describe('Redis key names', () => {
  it('puts every key of one task in the handle\'s slot, and every key of one owner in the owner\'s', () => {
    const task = keys.task('hAnDlE-1_x');
    assert.deepEqual(new Set(ownKeys(task).map(hashTag)), new Set(['hAnDlE-1_x']));
    assert.equal(ownKeys(task).length, 5);
    assert.ok(ownKeys(task).every((key) => key.startsWith('tg:')));
    const owner = keys.owner('https://issuer.example|alice');
    assert.equal(hashTag(owner.live), hashTag(owner.tasks));
    assert.notEqual(hashTag(owner.live), hashTag(keys.owner('https://issuer.example|bob').live));
  });

  it('digests what a client or backend chose: bounded, and no brace can move a key into another slot', () => {
    const hostile = `{evil}${'x'.repeat(10_000)}`;
    for (const key of [keys.owner(hostile).live, keys.session('tools', hostile), keys.backend('tools', 'http://a', hostile), keys.serverRequest(hostile), keys.window(hostile, 60_000)]) {
      assert.ok(key.length < 120, key);
      assert.ok(!key.includes('evil'), key);
      assert.equal(key.split('{').length - 1 <= 1, true, key);
    }
    assert.notEqual(keys.backend('tools', 'http://a', '7'), keys.backend('tools', 'http://b', '7'), 'the same backend id on another instance');
  });

  it('orders an owner\'s list newest first by the members\' bytes, and gives the handle back', () => {
    const older = listMember({ createdAt: 1_700_000_000_000, handle: 'zzz' });
    const newer = listMember({ createdAt: 1_700_000_000_001, handle: 'aaa' });
    const tie = listMember({ createdAt: 1_700_000_000_001, handle: 'bbb' });
    assert.deepEqual([older, tie, newer].sort(), [newer, tie, older]);
    assert.equal(handleOfListMember(tie), 'bbb');
    assert.equal(listMember({ createdAt: 0, handle: 'h' }).length, listMember({ createdAt: Date.now(), handle: 'h' }).length, 'fixed width');
  });

  it('keeps a task\'s keys a minute past its expiry, in whole milliseconds above zero', () => {
    assert.equal(taskKeyTtl(10_000, 10_000), 60_000);
    assert.equal(taskKeyTtl(10_000, 200_000), 1, 'long expired: still a valid PX');
    assert.equal(pxTtl(0.2), 1);
    assert.equal(pxTtl(1500.1), 1501);
  });
});
