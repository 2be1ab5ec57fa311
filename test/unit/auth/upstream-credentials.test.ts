import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyUpstreamCredentials, headerValue, identityHeaderNames } from '../../../src/upstream/credentials/credentials-policy.js';
import { parseConfig } from '../../../src/config/index.js';

const principal = { issuer: 'https://issuer.example', subject: 'alice', tenant: 'acme', scopes: ['a', 'b'] };
const NAMES = { subject: 'x-sub', issuer: 'x-iss', tenant: 'x-tenant', clientId: 'x-client', scopes: 'x-scopes' };

function clientHeaders(): Record<string, string> {
  return { authorization: 'Bearer client-token', 'x-sub': 'admin', 'x-taskgate-subject': 'root', 'x-client': 'spoof', accept: 'application/json' };
}

describe('applyUpstreamCredentials', () => {
  const stripped = new Set(Object.values(NAMES));

  it('removes the client token and identity headers, and adds nothing for type none', () => {
    const headers = clientHeaders();
    applyUpstreamCredentials(headers, { credentials: { type: 'none' }, strippedHeaders: stripped }, principal);
    assert.deepEqual(headers, { accept: 'application/json' });
  });

  it('sends the gateway\'s own token for type bearer', () => {
    const headers = clientHeaders();
    applyUpstreamCredentials(headers, { credentials: { type: 'bearer', token: 'gw-token' }, strippedHeaders: stripped }, principal);
    assert.deepEqual(headers, { accept: 'application/json', authorization: 'Bearer gw-token' });
  });

  it('replaces identity headers with the principal, omitting what it lacks', () => {
    const headers = clientHeaders();
    applyUpstreamCredentials(headers, { credentials: { type: 'identity-headers', headers: NAMES }, strippedHeaders: stripped }, principal);
    assert.deepEqual(headers, { accept: 'application/json', 'x-sub': 'alice', 'x-iss': 'https://issuer.example', 'x-tenant': 'acme', 'x-scopes': 'a b' });
  });

  it('collects the identity header names of every upstream', () => {
    const config = parseConfig(`publicUrl: https://mcp.example.com
auth: { mode: jwt, issuers: [{ issuer: https://i.example, jwksUri: https://i.example/jwks }] }
upstreams:
  a: { instances: [http://10.0.0.1:1], credentials: { type: identity-headers, headers: { subject: X-User } } }
  b: { instances: [http://10.0.0.2:1] }
routes: [{ path: /mcp, upstream: a }]
`, { env: {} });
    assert.deepEqual(
      [...identityHeaderNames(config.upstreams)].sort(),
      ['x-taskgate-client-id', 'x-taskgate-issuer', 'x-taskgate-scopes', 'x-taskgate-tenant', 'x-user'],
    );
  });
});

describe('headerValue', () => {
  it('sends plain printable ASCII as is and percent-encodes anything else', () => {
    assert.equal(headerValue('user|123@example.com'), 'user|123@example.com');
    assert.equal(headerValue('Zoë'), 'Zo%C3%AB');
    assert.equal(headerValue('50%'), '50%25');
    assert.equal(headerValue(' padded'), '%20padded');
    assert.equal(headerValue('line\r\nInjected: yes'), 'line%0D%0AInjected%3A%20yes');
    assert.equal(headerValue('\ud800'), '%EF%BF%BD', 'a lone surrogate does not throw');
  });

  it('always decodes back to the claim', () => {
    for (const value of ['plain', 'Zoë 北京', '50% off', 'a+b', ' x ', 'tab\there']) {
      assert.equal(decodeURIComponent(headerValue(value)), value);
    }
  });
});
