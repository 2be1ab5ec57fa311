import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OwnerIndex } from '../../../src/store/memory-owner-index.js';
import type { TaskListPosition } from '../../../src/store/store.js';

describe('OwnerIndex', () => {
  const positions = new Map<string, TaskListPosition>();
  const at = (handle: string, createdAt: number): TaskListPosition => {
    const position = { handle, createdAt };
    positions.set(handle, position);
    return position;
  };
  const newIndex = () => new OwnerIndex((handle) => positions.get(handle)!);

  it('reads an owner\'s handles newest first from a cursor, whatever order they came in', () => {
    const index = newIndex();
    for (const [handle, createdAt] of [['c', 3], ['a', 1], ['e', 5], ['b', 3], ['d', 4]] as const) index.add('o', at(handle, createdAt));
    index.add('other', at('x', 9));
    assert.deepEqual([...index.newestFirst('o', undefined)], ['e', 'd', 'b', 'c', 'a'], 'ties by handle');
    assert.deepEqual([...index.newestFirst('o', positions.get('b'))], ['c', 'a']);
    assert.deepEqual([...index.newestFirst('o', { handle: 'gone', createdAt: 4 })], ['b', 'c', 'a'], 'a cursor whose task is gone');
    assert.deepEqual([...index.newestFirst('nobody', undefined)], []);
  });

  it('removes the oldest, one in the middle and the last, and forgets an owner with none', () => {
    const index = newIndex();
    for (const [handle, createdAt] of [['a', 1], ['b', 2], ['c', 3]] as const) index.add('o', at(handle, createdAt));
    index.remove('o', positions.get('a')!);
    index.remove('o', positions.get('missing') ?? { handle: 'missing', createdAt: 2 });
    assert.deepEqual([...index.handlesOf('o')], ['b', 'c']);
    index.remove('o', positions.get('c')!);
    index.remove('o', positions.get('b')!);
    assert.deepEqual(index.handlesOf('o'), []);
  });
});
