/**
 * A resource several policy snapshots hold across a reload (src/lifecycle/shared-resource.ts):
 * closed once, when the last holder lets go, and never held again after that.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SharedResource } from '../../../src/lifecycle/shared-resource.js';

function agent() {
  const closed: string[] = [];
  const resource = new SharedResource('agent', async (value) => {
    closed.push(value);
  });
  return { resource, closed };
}

describe('SharedResource', () => {
  it('is held by its creator, and closed when the creator lets go', async () => {
    const { resource, closed } = agent();
    assert.equal(resource.closed, false);
    await resource.release();
    assert.equal(resource.closed, true);
    assert.deepEqual(closed, ['agent']);
  });

  it('stays open while any holder keeps it: a snapshot after a reload keeps the agent of the one before', async () => {
    const { resource, closed } = agent();
    assert.equal(resource.hold(), resource, 'hold returns the resource, for chaining');
    resource.hold();
    await resource.release();
    await resource.release();
    assert.deepEqual(closed, [], 'one holder is left');
    await resource.release();
    assert.deepEqual(closed, ['agent']);
  });

  it('closes once, however often it is released after that', async () => {
    const { resource, closed } = agent();
    await resource.release();
    await resource.release();
    await Promise.all([resource.release(), resource.release()]);
    assert.deepEqual(closed, ['agent']);
  });

  it('refuses a holder once closed: a new snapshot must not get a closed agent', async () => {
    const { resource } = agent();
    await resource.release();
    assert.throws(() => resource.hold(), /a closed resource cannot be held again/);
    assert.equal(resource.closed, true);
  });

  it('waits for the close to finish before the last release settles, and passes its failure on', async () => {
    let finished = false;
    const slow = new SharedResource(1, () => new Promise<void>((resolve) => setImmediate(() => ((finished = true), resolve()))));
    await slow.release();
    assert.equal(finished, true);
    const failing = new SharedResource(2, () => Promise.reject(new Error('close failed')));
    await assert.rejects(failing.release(), /close failed/);
    assert.equal(failing.closed, true, 'closed all the same: it is not closed a second time');
    await failing.release();
  });

  it('closes with a close function that is not async', async () => {
    let closed = 0;
    const sync = new SharedResource({}, () => void closed++);
    await sync.release();
    assert.equal(closed, 1);
  });
});
