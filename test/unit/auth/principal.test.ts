import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { missingScopes, principalFromClaims, principalKeyOf } from '../../../src/auth/principal.js';

const CLAIMS = { subject: 'sub', clientId: 'client_id', scopes: 'scope' };
const ISS = 'https://issuer.example';

describe('principalFromClaims', () => {
  it('maps the configured claims', () => {
    const principal = principalFromClaims({ sub: 'alice', tid: 'acme', client_id: 'app', scope: 'a b  a' }, ISS, { ...CLAIMS, tenant: 'tid' });
    assert.deepEqual(principal, { issuer: ISS, subject: 'alice', tenant: 'acme', clientId: 'app', scopes: ['a', 'b'] });
  });

  it('falls back to azp for the client, reads array scope claims, and drops unusable scopes', () => {
    const principal = principalFromClaims({ sub: 'bob', azp: 'web', scp: ['read', 7, 'has space', 'write'] }, ISS, { ...CLAIMS, scopes: 'scp' });
    assert.deepEqual(principal, { issuer: ISS, subject: 'bob', clientId: 'web', scopes: ['read', 'write'] });
  });

  it('reads a numeric tenant, and leaves the tenant out when no claim is configured', () => {
    assert.equal(principalFromClaims({ sub: 'x', tid: 42 }, ISS, { ...CLAIMS, tenant: 'tid' })?.tenant, '42');
    assert.equal(principalFromClaims({ sub: 'x', tid: 'acme' }, ISS, CLAIMS)?.tenant, undefined);
  });

  it('names no principal without a string subject', () => {
    assert.equal(principalFromClaims({}, ISS, CLAIMS), undefined);
    assert.equal(principalFromClaims({ sub: '' }, ISS, CLAIMS), undefined);
    assert.equal(principalFromClaims({ sub: 12 } as never, ISS, CLAIMS), undefined);
    assert.equal(principalFromClaims({ sub: 'x', uid: 'y' }, ISS, { ...CLAIMS, subject: 'uid' })?.subject, 'y');
  });
});

describe('principalKeyOf', () => {
  const alice = { issuer: ISS, subject: 'alice', tenant: 'acme', clientId: 'app', scopes: ['a'] };
  const policy = { includeTenant: true, includeClientId: false };

  it('is stable, opaque and URL-safe', () => {
    const key = principalKeyOf(alice, policy);
    assert.equal(key, principalKeyOf({ ...alice, scopes: ['other'] }, policy), 'scopes are not identity');
    assert.match(key, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(!key.includes('alice'));
  });

  it('tells principals apart by issuer, subject, and what the policy includes', () => {
    const key = principalKeyOf(alice, policy);
    assert.notEqual(principalKeyOf({ ...alice, issuer: 'https://other.example' }, policy), key);
    assert.notEqual(principalKeyOf({ ...alice, subject: 'bob' }, policy), key);
    assert.notEqual(principalKeyOf({ ...alice, tenant: 'other' }, policy), key);
    assert.equal(principalKeyOf({ ...alice, clientId: 'other' }, policy), key);
    assert.notEqual(principalKeyOf({ ...alice, clientId: 'other' }, { ...policy, includeClientId: true }), principalKeyOf(alice, { ...policy, includeClientId: true }));
    assert.equal(principalKeyOf({ ...alice, tenant: 'other' }, { ...policy, includeTenant: false }), principalKeyOf(alice, { ...policy, includeTenant: false }));
  });

  it('cannot be confused by separators inside the parts', () => {
    const a = principalKeyOf({ issuer: 'i', subject: 'a","b', scopes: [] }, policy);
    const b = principalKeyOf({ issuer: 'i","a', subject: 'b', scopes: [] }, policy);
    assert.notEqual(a, b);
  });
});

describe('missingScopes', () => {
  it('lists each required scope the principal lacks', () => {
    const principal = { issuer: ISS, subject: 's', scopes: ['a', 'c'] };
    assert.deepEqual(missingScopes(principal, ['a', 'b', 'c', 'd']), ['b', 'd']);
    assert.deepEqual(missingScopes(principal, []), []);
  });
});
