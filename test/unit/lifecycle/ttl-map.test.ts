import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TtlMap } from '../../../src/lifecycle/ttl-map.js';

describe('TtlMap', () => {
  it('forgets an entry at its deadline, and sweeps what has expired', () => {
    const map = new TtlMap<number>(10);
    map.set('a', 1, 100, 1000);
    map.set('b', 2, 500, 1000);
    assert.equal(map.get('a', 1099), 1);
    assert.equal(map.get('a', 1100), undefined);
    assert.equal(map.sweep(1600), 1);
    assert.equal(map.size, 0);
  });

  it('makes room at its cap by dropping the entry set longest ago', () => {
    const map = new TtlMap<number>(2);
    map.set('a', 1, 1000, 0);
    map.set('b', 2, 1000, 0);
    map.set('a', 3, 1000, 0); // set again: now the newest
    map.set('c', 4, 1000, 0);
    assert.equal(map.get('b', 0), undefined);
    assert.equal(map.get('a', 0), 3);
    assert.equal(map.get('c', 0), 4);
  });

  it('with a TTL of Infinity is a bounded memo: nothing expires, the oldest makes room', () => {
    const map = new TtlMap<string>(2);
    map.set('x', 'X', Infinity, 0);
    assert.equal(map.get('x', Number.MAX_SAFE_INTEGER), 'X');
    assert.equal(map.sweep(Number.MAX_SAFE_INTEGER), 0);
    map.set('y', 'Y', Infinity);
    map.set('z', 'Z', Infinity);
    assert.equal(map.get('x'), undefined);
    assert.equal(map.size, 2);
  });

  it('updates a live entry in place and keeps its deadline', () => {
    const map = new TtlMap<number>(2);
    map.set('a', 1, 100, 0);
    assert.equal(map.update('a', 2, 50), true);
    assert.equal(map.get('a', 99), 2);
    assert.equal(map.update('a', 3, 100), false);
  });
});
