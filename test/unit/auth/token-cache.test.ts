import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenCache } from '../../../src/auth/token-cache.js';

const identity = (subject: string) => ({ principal: { issuer: 'i', subject, scopes: [] }, principalKey: `k-${subject}` });
const NOW = 1_700_000_000_000;
const inSeconds = (s: number) => NOW / 1000 + s;

describe('TokenCache', () => {
  it('remembers a token per route until min(exp, now + maxTtl)', () => {
    const cache = new TokenCache({ maxEntries: 10, maxTtlMs: 60_000 });
    cache.set('t1', '/mcp', identity('a'), inSeconds(3600), NOW);
    assert.equal(cache.get('t1', '/mcp', NOW + 59_999)?.principalKey, 'k-a');
    assert.equal(cache.get('t1', '/other', NOW), undefined, 'another route verifies for itself');
    assert.equal(cache.get('t1', '/mcp', NOW + 60_000), undefined, 'maxTtl');

    cache.set('t2', '/mcp', identity('b'), inSeconds(10), NOW);
    assert.equal(cache.get('t2', '/mcp', NOW + 9_999)?.principalKey, 'k-b');
    assert.equal(cache.get('t2', '/mcp', NOW + 10_000), undefined, 'never past exp');
  });

  it('does not remember a token that is already past exp', () => {
    const cache = new TokenCache({ maxEntries: 10, maxTtlMs: 60_000 });
    cache.set('t', '/mcp', identity('a'), inSeconds(-5), NOW);
    assert.equal(cache.size, 0);
  });

  it('stays within maxEntries, dropping the oldest', () => {
    const cache = new TokenCache({ maxEntries: 2, maxTtlMs: 60_000 });
    for (const t of ['a', 'b', 'c']) cache.set(t, '/mcp', identity(t), inSeconds(60), NOW);
    assert.equal(cache.size, 2);
    assert.equal(cache.get('a', '/mcp', NOW), undefined);
    assert.equal(cache.get('c', '/mcp', NOW)?.principalKey, 'k-c');
  });

  it('is off with maxEntries 0 or maxTtl 0', () => {
    for (const options of [{ maxEntries: 0, maxTtlMs: 60_000 }, { maxEntries: 10, maxTtlMs: 0 }]) {
      const cache = new TokenCache(options);
      cache.set('t', '/mcp', identity('a'), inSeconds(60), NOW);
      assert.equal(cache.get('t', '/mcp', NOW), undefined);
    }
  });
});
