import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ExpiryIndex } from '../../../src/store/memory-expiry-index.js';

function read(entries: Iterable<[number, ReadonlySet<string>]>): [number, string[]][] {
  return [...entries].map(([second, handles]) => [second, [...handles]]);
}

describe('ExpiryIndex', () => {
  it('keeps the seconds in order whatever order they are added in', () => {
    const index = new ExpiryIndex();
    for (const [handle, at] of [['c', 30_500], ['a', 10_000], ['d', 40_999], ['b', 20_001], ['a2', 10_999]] as const) index.add(handle, at);
    assert.deepEqual(read(index.from(-Infinity)), [[10, ['a', 'a2']], [20, ['b']], [30, ['c']], [40, ['d']]]);
    assert.deepEqual(read(index.from(20_999)), [[20, ['b']], [30, ['c']], [40, ['d']]], 'from the second that holds the time');
    assert.deepEqual(read(index.from(41_000)), []);
  });

  it('forgets a second when its last handle goes, and walks on while a reader removes', () => {
    const index = new ExpiryIndex();
    for (let s = 1; s <= 5; s++) index.add(`h${s}`, s * 1000);
    index.remove('h3', 3000);
    index.remove('missing', 9000);
    assert.equal(index.secondsIndexed, 4);
    const seen: number[] = [];
    for (const [second] of index.from(0)) {
      seen.push(second);
      // The sweep deletes what it read, and what comes later, as it goes.
      index.remove(`h${second}`, second * 1000);
      if (second === 2) index.remove('h4', 4000);
    }
    assert.deepEqual(seen, [1, 2, 5]);
    assert.equal(index.secondsIndexed, 0);
  });

  it('gives the due seconds only, oldest first', () => {
    const index = new ExpiryIndex();
    for (const at of [5_000, 1_000, 3_000, 7_000]) index.add(`h${at}`, at);
    assert.deepEqual(read(index.due(5_400)).map(([s]) => s), [1, 3, 5]);
    assert.deepEqual(read(index.due(500)), []);
    index.clear();
    assert.deepEqual(read(index.due(Infinity)), []);
  });
});
