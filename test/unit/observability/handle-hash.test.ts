/** What stands for a task handle in the general log (src/observability/handle-hash.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHandleHasher } from '../../../src/observability/handle-hash.js';

describe('handle hash', () => {
  it('is short, URL-safe and the same for the same handle', () => {
    const hash = createHandleHasher('salt-one');
    const value = hash('a-task-handle');
    assert.match(value, /^[A-Za-z0-9_-]{12}$/);
    assert.equal(hash('a-task-handle'), value);
    assert.notEqual(hash('another-handle'), value);
  });

  it('depends on the salt: replicas that share it name tasks alike, others cannot join the logs', () => {
    assert.equal(createHandleHasher('shared')('h'), createHandleHasher('shared')('h'));
    assert.notEqual(createHandleHasher('shared')('h'), createHandleHasher('other')('h'));
    assert.notEqual(createHandleHasher()('h'), createHandleHasher()('h'), 'without a salt, a random one');
  });

  it('keeps salt and handle apart: no other split of the same text hashes alike', () => {
    assert.notEqual(createHandleHasher('ab')('c'), createHandleHasher('a')('bc'));
  });
});
