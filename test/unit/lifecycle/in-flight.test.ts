/** The two counts a reload relies on to close a replaced policy neither early nor never. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InFlight } from '../../../src/lifecycle/in-flight.js';
import { SharedResource } from '../../../src/lifecycle/shared-resource.js';

describe('InFlight', () => {
  it('is idle at once when nothing runs, and once the last piece of work leaves', async () => {
    const inFlight = new InFlight();
    await inFlight.whenIdle();
    const first = inFlight.enter();
    const second = inFlight.enter();
    let idle = false;
    const waiting = inFlight.whenIdle().then(() => (idle = true));
    first();
    first(); // counted out once, however often called
    await Promise.resolve();
    assert.equal(idle, false);
    assert.equal(inFlight.size, 1);
    second();
    await waiting;
    assert.equal(idle, true);
    assert.equal(inFlight.size, 0);
  });
});

describe('SharedResource', () => {
  it('closes its value when the last holder lets go, once', async () => {
    const closed: string[] = [];
    const shared = new SharedResource('agent', (value) => {
      closed.push(value);
    });
    shared.hold();
    await shared.release();
    assert.deepEqual(closed, []);
    await shared.release();
    await shared.release();
    assert.deepEqual(closed, ['agent']);
    assert.equal(shared.closed, true);
    assert.throws(() => shared.hold());
  });
});
