/**
 * A 2025 tools/call's concurrency slot, held until the client's response has closed and every
 * upstream request of the call has ended (src/limits/call-hold.ts); cut at the slot's lapse.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CallHold } from '../../../src/limits/call-hold.js';
import { InFlight } from '../../../src/lifecycle/in-flight.js';
import { waitFor } from '../../support/wait.js';

/** A hold lapsing `lapsesInMs` from now, and what it did: releases, the open holds, the snapshot's work. */
function holdFor(lapsesInMs = 60_000) {
  const seen = { releases: 0 };
  const holds = new Set<CallHold>();
  const snapshot = new InFlight();
  const hold = new CallHold({ release: () => seen.releases++, lapsesAt: Date.now() + lapsesInMs, holds, enterSnapshot: () => snapshot.enter() });
  return { hold, holds, snapshot, seen };
}

describe('CallHold', () => {
  it('gives the slot back once the response closed and the upstream request ended, in either order', () => {
    const a = holdFor();
    const endA = a.hold.begin();
    endA();
    assert.equal(a.seen.releases, 0, 'the response is still open');
    a.hold.responseClosed();
    assert.equal(a.seen.releases, 1);
    assert.equal(a.holds.size, 0);
    assert.equal(a.snapshot.size, 0, 'nothing was left to the backend alone');

    const b = holdFor();
    const endB = b.hold.begin();
    b.hold.responseClosed();
    assert.equal(b.seen.releases, 0, 'the backend has not answered');
    assert.equal(b.snapshot.size, 1, 'the backend\'s work counts on the policy snapshot');
    endB();
    assert.equal(b.seen.releases, 1);
    assert.equal(b.snapshot.size, 0, 'and leaves it once done');
  });

  it('waits for every upstream request of the call (a fail-over or a credential retry makes more than one)', () => {
    const { hold, seen } = holdFor();
    const first = hold.begin();
    const retry = hold.begin();
    hold.responseClosed();
    first();
    first(); // an end reported twice counts once
    assert.equal(seen.releases, 0, 'the retry still runs');
    retry();
    assert.equal(seen.releases, 1);
  });

  it('gives the slot back once, whatever is reported after it settled', () => {
    const { hold, seen, snapshot } = holdFor();
    const end = hold.begin();
    hold.responseClosed();
    end();
    hold.responseClosed();
    hold.begin()();
    hold.cut();
    assert.equal(seen.releases, 1);
    assert.equal(snapshot.size, 0);
  });

  it('is one of the stage\'s open holds until it settles', () => {
    const { hold, holds } = holdFor();
    assert.equal(holds.has(hold), true);
    const end = hold.begin();
    hold.responseClosed();
    assert.equal(holds.has(hold), true);
    end();
    assert.equal(holds.has(hold), false);
  });

  it('cuts the backend\'s request when the slot lapses: the signal aborts, the request ends, the slot goes back', async () => {
    const { hold, seen, snapshot } = holdFor(30);
    hold.signal.once('abort', hold.begin()); // the upstream request ends when aborted, as undici's does
    hold.responseClosed();
    assert.equal(hold.signal.aborted, false);
    await waitFor(() => hold.signal.aborted, 'the cut at the slot\'s lapse', 5000);
    assert.equal(seen.releases, 1);
    assert.equal(snapshot.size, 0);
  });

  it('cuts at once a hold whose slot lapsed already', async () => {
    const { hold, seen } = holdFor(-5000);
    hold.signal.once('abort', hold.begin());
    hold.responseClosed();
    await waitFor(() => seen.releases === 1, 'the cut of a lapsed slot', 5000);
  });

  it('never cuts a call that settled before its slot lapsed', async () => {
    const { hold, seen } = holdFor(30);
    const end = hold.begin();
    hold.responseClosed();
    end();
    assert.equal(seen.releases, 1);
    // The cut would come 30 ms on: wait for it well past that, and see it never come.
    await assert.rejects(waitFor(() => hold.signal.aborted, 'a cut after the hold settled', 300), /timed out/);
  });

  it('takes its signal for the client\'s: aborted by cut(), listeners told once', () => {
    const { hold } = holdFor();
    let told = 0;
    hold.signal.once('abort', () => told++);
    hold.cut();
    hold.cut();
    assert.equal(hold.signal.aborted, true);
    assert.equal(told, 1);
  });
});
