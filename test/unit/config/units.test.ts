import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDuration, parseSize } from '../../../src/config/index.js';

describe('parseDuration', () => {
  it('converts each unit to milliseconds', () => {
    assert.equal(parseDuration('0s'), 0);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('5m'), 300_000);
    assert.equal(parseDuration('1h'), 3_600_000);
    assert.equal(parseDuration('2d'), 172_800_000);
  });

  it('rejects a missing unit, fractions, signs, spaces and unknown units', () => {
    for (const text of ['30', '1.5s', '-1s', ' 1s', '1 s', '1S', '1w', '', 's']) {
      assert.throws(() => parseDuration(text), RangeError, text);
    }
  });

  it('rejects durations a Node timer cannot hold', () => {
    assert.equal(parseDuration('24d'), 24 * 86_400_000);
    assert.throws(() => parseDuration('25d'), /at most 2147483647ms/);
  });
});

describe('parseSize', () => {
  it('converts binary units to bytes', () => {
    assert.equal(parseSize('512B'), 512);
    assert.equal(parseSize('64KiB'), 65_536);
    assert.equal(parseSize('1MiB'), 1_048_576);
    assert.equal(parseSize('2GiB'), 2 * 1024 ** 3);
  });

  it('takes a plain integer, as number or digits, as bytes', () => {
    assert.equal(parseSize(1024), 1024);
    assert.equal(parseSize('1024'), 1024);
  });

  it('rejects decimal units, fractions and garbage', () => {
    for (const value of ['1MB', '1kb', '1.5MiB', '-1', '1 MiB', 'big', 1.5]) {
      assert.throws(() => parseSize(value), RangeError, String(value));
    }
  });

  it('rejects sizes beyond a safe integer', () => {
    assert.throws(() => parseSize('9999999999999GiB'), /too large/);
  });
});
