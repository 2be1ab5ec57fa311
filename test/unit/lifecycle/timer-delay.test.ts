import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_TIMER_DELAY_MS, timerDelay } from '../../../src/lifecycle/timer-delay.js';

describe('timerDelay', () => {
  it('keeps delays a timer can hold', () => {
    assert.equal(timerDelay(0), 0);
    assert.equal(timerDelay(1500), 1500);
    assert.equal(timerDelay(MAX_TIMER_DELAY_MS), MAX_TIMER_DELAY_MS);
  });

  it('clamps what Node would fire after 1 ms instead', () => {
    assert.equal(timerDelay(2 ** 31), MAX_TIMER_DELAY_MS);
    assert.equal(timerDelay(1e15), MAX_TIMER_DELAY_MS);
    assert.equal(timerDelay(Infinity), MAX_TIMER_DELAY_MS);
    assert.equal(timerDelay(-5), 0);
    assert.equal(timerDelay(Number.NaN), 0);
  });

  it('a clamped timer does not fire at once', async () => {
    let fired = false;
    const timer = setTimeout(() => (fired = true), timerDelay(2 ** 40));
    await new Promise((resolve) => setTimeout(resolve, 20));
    clearTimeout(timer);
    assert.equal(fired, false);
  });
});
