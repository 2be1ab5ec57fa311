/**
 * What the console shows per principal (src/observability/principal-activity.ts): nothing kept
 * while the console is off; polls per minute as a sliding estimate over fixed minute windows;
 * refusals and alerts counted; a principal forgotten after an idle hour.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PrincipalActivity } from '../../../src/observability/principal-activity.js';

const T0 = 1_800_000_000_000;

describe('PrincipalActivity', () => {
  it('keeps nothing while the console is off', () => {
    const activity = new PrincipalActivity();
    activity.poll('k', 'https://issuer', T0);
    activity.refused('k', 'https://issuer', 'denied', T0);
    activity.alert('k', T0);
    assert.equal(activity.read('k', T0), undefined);
    assert.deepEqual(activity.flagged(T0), []);
  });

  it('estimates polls over the last minute from the current window and the share of the previous one it still covers', () => {
    const activity = new PrincipalActivity();
    activity.active = true;
    for (let i = 0; i < 30; i++) activity.poll('k', undefined, T0 + i * 1000);
    assert.equal(activity.read('k', T0 + 30_000)?.pollsPerMinute, 30);
    // 15 s into the next window: 45 s of the previous one are still within the last minute.
    activity.poll('k', undefined, T0 + 75_000);
    assert.equal(activity.read('k', T0 + 75_000)?.pollsPerMinute, 30 * 0.75 + 1);
    // Two windows on, nothing of them is left.
    assert.equal(activity.read('k', T0 + 185_000)?.pollsPerMinute, 0);
  });

  it('counts refusals by reason and alerts, lists the principals with either, and forgets one after an idle hour', () => {
    const activity = new PrincipalActivity();
    activity.active = true;
    activity.poll('quiet', 'https://issuer', T0);
    activity.refused('prober', 'https://issuer', 'not_found', T0);
    activity.refused('prober', undefined, 'not_found', T0 + 1);
    activity.refused('prober', undefined, 'throttled', T0 + 2);
    activity.alert('prober', T0 + 3);
    assert.deepEqual(activity.read('prober', T0 + 4), {
      pollsPerMinute: 0,
      refusals: { not_found: 2, denied: 0, throttled: 1 },
      enumerationAlerts: 1,
      lastAlertAt: T0 + 3,
      since: T0,
      issuer: 'https://issuer',
    });
    assert.deepEqual(activity.flagged(T0 + 4), ['prober']);
    assert.equal(activity.read('prober', T0 + 3 + 60 * 60_000), undefined, 'an hour after its last request');
  });
});
