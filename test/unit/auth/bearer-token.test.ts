import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractBearerToken, MAX_TOKEN_LENGTH } from '../../../src/auth/bearer-token.js';

const raw = (...values: string[]) => values.flatMap((v) => ['Authorization', v]);

describe('extractBearerToken', () => {
  const cases: { name: string; rawHeaders: string[]; url?: string; expected: ReturnType<typeof extractBearerToken> }[] = [
    { name: 'a bearer token', rawHeaders: raw('Bearer abc.def-ghi_jkl~m+n/o=='), expected: { kind: 'token', token: 'abc.def-ghi_jkl~m+n/o==' } },
    { name: 'the scheme in any case', rawHeaders: ['authorization', 'bEaReR abc'], expected: { kind: 'token', token: 'abc' } },
    { name: 'extra spaces around the token', rawHeaders: raw('  Bearer   abc  '), expected: { kind: 'token', token: 'abc' } },
    { name: 'no header', rawHeaders: ['Accept', 'application/json'], expected: { kind: 'none' } },
    { name: 'another scheme', rawHeaders: raw('Basic dXNlcjpwYXNz'), expected: { kind: 'none' } },
    { name: 'a bare word', rawHeaders: raw('abc'), expected: { kind: 'none' } },
    { name: 'only a query token', rawHeaders: [], url: '/mcp?access_token=abc', expected: { kind: 'none' } },
    { name: 'Bearer with nothing after it', rawHeaders: raw('Bearer'), expected: { kind: 'malformed', description: 'empty bearer token' } },
    { name: 'two headers', rawHeaders: raw('Bearer a', 'Bearer b'), expected: { kind: 'malformed', description: 'more than one Authorization header' } },
    { name: 'a comma list', rawHeaders: raw('Bearer a, Bearer b'), expected: { kind: 'malformed', description: 'not a single bearer token' } },
    { name: 'a space inside', rawHeaders: raw('Bearer a b'), expected: { kind: 'malformed', description: 'not a single bearer token' } },
    { name: '= before the end', rawHeaders: raw('Bearer a=b'), expected: { kind: 'malformed', description: 'not a single bearer token' } },
    {
      name: 'a token too long',
      rawHeaders: raw(`Bearer ${'a'.repeat(MAX_TOKEN_LENGTH + 1)}`),
      expected: { kind: 'malformed', description: 'bearer token too long' },
    },
    {
      name: 'a header token and a query token',
      rawHeaders: raw('Bearer abc'),
      url: '/mcp?x=1&access_token=abc',
      expected: { kind: 'malformed', description: 'access_token in the query string is not accepted' },
    },
    { name: 'an unrelated query', rawHeaders: raw('Bearer abc'), url: '/mcp?token=1', expected: { kind: 'token', token: 'abc' } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(extractBearerToken(c.rawHeaders, c.url ?? '/mcp'), c.expected);
    });
  }

  it('accepts a token of exactly the maximum length', () => {
    const token = 'a'.repeat(MAX_TOKEN_LENGTH);
    assert.deepEqual(extractBearerToken(raw(`Bearer ${token}`), '/mcp'), { kind: 'token', token });
  });
});
