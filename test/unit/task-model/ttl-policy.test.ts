/**
 * The TTL policy (src/task-model/ttl-policy.ts): every lifetime a task gets is held to
 * tasks.ttl.max and the tool's maxTtl, in whole milliseconds, whoever asked for it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tasksSchema } from '../../../src/config/sections/tasks.js';
import { advertisedTtl, changedTtl, ttlCap, ttlWithin } from '../../../src/task-model/ttl-policy.js';

const POLICY = tasksSchema.parse({ ttl: { default: '10m', max: '1h' }, tools: { short: { maxTtl: '5m' } } });
const MINUTE = 60_000;

describe('TTL policy', () => {
  it('caps every tool by tasks.ttl.max, and a tool with its own maxTtl by that', () => {
    assert.equal(ttlCap(POLICY, 'any'), 60 * MINUTE);
    assert.equal(ttlCap(POLICY, 'short'), 5 * MINUTE);
  });

  it('gives what is wanted within the cap, the default for anything unusable, in whole milliseconds', () => {
    assert.equal(ttlWithin(POLICY, 'any', 2 * MINUTE), 2 * MINUTE);
    assert.equal(ttlWithin(POLICY, 'any', 2 * 60 * MINUTE), 60 * MINUTE, 'never past tasks.ttl.max');
    assert.equal(ttlWithin(POLICY, 'short', 10 * MINUTE), 5 * MINUTE, 'never past the tool\'s maxTtl');
    assert.equal(ttlWithin(POLICY, 'any', 1500.7), 1500, 'rounded down: no more than was asked');
    assert.equal(ttlWithin(POLICY, 'any', 0), 0);
    for (const unusable of [undefined, null, -1, Number.NaN, Infinity, '60000', {}]) {
      assert.equal(ttlWithin(POLICY, 'any', unusable), 10 * MINUTE, String(unusable));
    }
    assert.equal(ttlWithin(POLICY, 'short'), 5 * MINUTE, 'the default, itself within the tool\'s cap');
  });

  it('holds an advertised lifetime to the limit; forever or unsaid is the limit itself', () => {
    assert.equal(advertisedTtl(30_000, 60_000), 30_000);
    assert.equal(advertisedTtl(90_000, 60_000), 60_000);
    assert.equal(advertisedTtl(null, 60_000), 60_000, 'a backend that keeps the task forever gets the limit');
    assert.equal(advertisedTtl(undefined, 60_000), 60_000);
  });

  it('lets a lifetime that changes mid-task grow to the cap, but never shrink below what was promised', () => {
    const record = { tool: 'short', ttlMs: 2 * MINUTE };
    assert.equal(changedTtl(POLICY, record, undefined), 2 * MINUTE, 'unsaid: as it was');
    assert.equal(changedTtl(POLICY, record, 4 * MINUTE), 4 * MINUTE);
    assert.equal(changedTtl(POLICY, record, 30 * MINUTE), 5 * MINUTE, 'the tool\'s cap');
    assert.equal(changedTtl(POLICY, record, null), 5 * MINUTE, 'forever is the cap');
    assert.equal(changedTtl(POLICY, record, MINUTE), 2 * MINUTE, 'the client was promised two minutes');
  });
});
