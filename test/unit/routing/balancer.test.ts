/**
 * Instance pools across a reload: kept instances keep their state, removed ones drain
 * (findable, never selected) and are then forgotten, and sessions that were never recorded
 * stay on the instance that holds them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InstancePool } from '../../../src/routing/balancer.js';

const A = 'http://10.0.0.1:3000';
const B = 'http://10.0.0.2:3000';
const C = 'http://10.0.0.3:3000';

function selections(pool: InstancePool, count: number, now: number): string[] {
  return Array.from({ length: count }, () => pool.selectInstance(now)!.url);
}

describe('InstancePool after a reload', () => {
  it('keeps the objects (and cool-downs) of the instances it keeps', () => {
    const before = new InstancePool('tools', [A, B], 10_000);
    before.markRefused(before.findInstance(B, 0)!, 1000);
    const after = new InstancePool('tools', [B, C], 10_000, { previous: before, drainMs: 60_000, now: 2000 });
    assert.equal(after.findInstance(B, 2000), before.findInstance(B, 2000));
    assert.equal(after.findInstance(B, 2000)!.coolingUntil, 11_000);
  });

  it('drains a removed instance: found for what is recorded on it, never selected, forgotten after the drain', () => {
    const before = new InstancePool('tools', [A, B], 1000);
    const after = new InstancePool('tools', [A], 1000, { previous: before, drainMs: 60_000, now: 0 });
    assert.deepEqual(new Set(selections(after, 10, 1)), new Set([A]));
    assert.equal(after.findInstance(B, 59_999)?.url, B);
    assert.equal(after.findInstance(B, 60_000), undefined);
    // Not the sole instance while another drains: sessions must still be looked up.
    assert.equal(after.soleInstance(1), undefined);
    assert.equal(after.soleInstance(60_000)?.url, A);
  });

  it('keeps the end of a drain across later reloads, and ends it when the instance comes back', () => {
    const first = new InstancePool('tools', [A, B], 1000);
    const second = new InstancePool('tools', [A], 1000, { previous: first, drainMs: 60_000, now: 0 });
    const third = new InstancePool('tools', [A, C], 1000, { previous: second, drainMs: 60_000, now: 30_000 });
    assert.equal(third.findInstance(B, 59_999)?.url, B);
    assert.equal(third.findInstance(B, 60_000), undefined, 'the drain ends when it was due, not 60 s after the last reload');
    const fourth = new InstancePool('tools', [A, B, C], 1000, { previous: third, drainMs: 60_000, now: 40_000 });
    assert.ok(selections(fourth, 3, 40_000).includes(B), 'back among the instances that take new work');
    assert.equal(fourth.findInstance(B, 100_000)?.url, B, 'and no longer draining');
  });

  it('sends sessions begun while the upstream had one instance to it, once a reload adds another', () => {
    const sole = new InstancePool('tools', [A], 1000);
    assert.equal(sole.soleInstance()?.url, A);
    const grown = new InstancePool('tools', [A, B], 1000, { previous: sole, drainMs: 60_000 });
    assert.equal(grown.unrecordedSessionsOn?.url, A);
    const regrown = new InstancePool('tools', [A, B, C], 1000, { previous: grown, drainMs: 60_000 });
    assert.equal(regrown.unrecordedSessionsOn?.url, A, 'carried over while A is there');
    const recorded = new InstancePool('tools', [A, B], 1000);
    assert.equal(new InstancePool('tools', [A, B, C], 1000, { previous: recorded, drainMs: 60_000 }).unrecordedSessionsOn, undefined);
  });
});
