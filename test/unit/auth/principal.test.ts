import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHash } from 'node:crypto';
import { missingScopes, principalFromClaims, principalKeyOf, type ClaimNames, type Principal } from '../../../src/auth/principal.js';

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
  const claims = { ...CLAIMS, tenant: 'tid' };
  const policy = { includeTenant: true, includeClientId: false };
  const key = (principal: Principal, names: ClaimNames = claims, keyPolicy = policy) => principalKeyOf(principal, names, keyPolicy);

  it('is stable, opaque and URL-safe', () => {
    assert.equal(key(alice), key({ ...alice, scopes: ['other'] }), 'scopes are not identity');
    assert.match(key(alice), /^[A-Za-z0-9_-]{43}$/);
    assert.ok(!key(alice).includes('alice'));
  });

  it('tells principals apart by issuer, subject, and what the policy includes', () => {
    assert.notEqual(key({ ...alice, issuer: 'https://other.example' }), key(alice));
    assert.notEqual(key({ ...alice, subject: 'bob' }), key(alice));
    assert.notEqual(key({ ...alice, tenant: 'other' }), key(alice));
    assert.equal(key({ ...alice, clientId: 'other' }), key(alice));
    const withClient = { ...policy, includeClientId: true };
    assert.notEqual(key({ ...alice, clientId: 'other' }, claims, withClient), key(alice, claims, withClient));
    const noTenant = { ...policy, includeTenant: false };
    assert.equal(key({ ...alice, tenant: 'other' }, claims, noTenant), key(alice, claims, noTenant));
  });

  it('keys each value with the claim it was read from, so a changed mapping merges no one', () => {
    // The same value read from another claim is another principal (subject: sub → email).
    assert.notEqual(key(alice, { ...claims, subject: 'email' }), key(alice));
    assert.notEqual(key(alice, { ...claims, tenant: 'org' }), key(alice));
    const withClient = { ...policy, includeClientId: true };
    assert.notEqual(key(alice, { ...claims, clientId: 'appid' }, withClient), key(alice, claims, withClient));
    // Claims the policy leaves out are not identity, whatever their names.
    assert.equal(key(alice, { ...claims, clientId: 'appid' }), key(alice));
    assert.equal(key(alice, { ...claims, tenant: 'org' }, { ...policy, includeTenant: false }), key(alice, claims, { ...policy, includeTenant: false }));
  });

  it('keeps a part left out apart from a part included but absent', () => {
    const tenantless = { issuer: ISS, subject: 'alice', scopes: [] };
    // includeTenant off (every tenant one principal) is not "alice without a tenant".
    assert.notEqual(key(tenantless), key(alice, claims, { ...policy, includeTenant: false }));
    // No tenant claim configured leaves the tenant out, as includeTenant: false does.
    assert.equal(key(tenantless, CLAIMS), key(alice, claims, { ...policy, includeTenant: false }));
    const withClient = { ...policy, includeClientId: true };
    assert.notEqual(key({ ...alice, clientId: undefined }, claims, withClient), key(alice));
  });

  it('cannot be confused by separators inside the parts', () => {
    const a = key({ issuer: 'i', subject: 'a","b', scopes: [] });
    const b = key({ issuer: 'i","a', subject: 'b', scopes: [] });
    assert.notEqual(a, b);
    // A value shaped like another part's claim name and value is still only a value.
    assert.notEqual(key({ issuer: 'i', subject: 'x', scopes: [] }, { ...claims, subject: 'sub' }), key({ issuer: 'i', subject: 'sub', scopes: [] }, { ...claims, subject: 'x' }));
  });

  it('is not the version 1 key: tasks from before the upgrade are not reachable by it', () => {
    const v1 = createHash('sha256').update(JSON.stringify([ISS, 'alice', 'acme', null])).digest('base64url');
    assert.notEqual(key(alice), v1);
  });
});

describe('missingScopes', () => {
  it('lists each required scope the principal lacks', () => {
    const principal = { issuer: ISS, subject: 's', scopes: ['a', 'c'] };
    assert.deepEqual(missingScopes(principal, ['a', 'b', 'c', 'd']), ['b', 'd']);
    assert.deepEqual(missingScopes(principal, []), []);
  });
});
