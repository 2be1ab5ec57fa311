import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../src/config/index.js';
import { issuesOf } from '../config/policies.js';

const BASE = `publicUrl: https://mcp.example.com
upstreams:
  tools: { instances: [http://127.0.0.1:3000] }
routes:
  - { path: /mcp, upstream: tools }
`;

describe('auth policy', () => {
  it('fills every default of mode jwt', () => {
    const config = parseConfig(`${BASE}auth:\n  mode: jwt\n  issuers: [{ issuer: https://a.example/, jwksUri: https://a.example/jwks }]\n`, { env: {} });
    assert.deepEqual(config.auth, {
      mode: 'jwt',
      issuers: [
        {
          issuer: 'https://a.example/',
          jwksUri: 'https://a.example/jwks',
          algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
          clockTolerance: 30_000,
          claims: { subject: 'sub', clientId: 'client_id', scopes: 'scope' },
          jwks: { cooldown: 30_000, maxAge: 600_000, timeout: 5_000 },
        },
      ],
      principalKey: { includeClientId: false, includeTenant: true },
      tokenCache: { maxEntries: 10_000, maxTtl: 300_000 },
    });
  });

  it('requires auth, and a known mode', () => {
    assert.equal(issuesOf(BASE).find((i) => i.path === 'auth')?.message, 'required');
    assert.ok(issuesOf(`${BASE}auth: { mode: basic }\n`).some((i) => i.path.startsWith('auth')));
  });

  it('refuses none and HMAC algorithms, plain-http key sets off loopback, and unclear key sources', () => {
    const issues = issuesOf(`${BASE}auth:
  mode: jwt
  issuers:
    - { issuer: a, jwksUri: http://idp.example/jwks, algorithms: [none, HS256, RS256] }
    - { issuer: b, clockTolerance: soon }
    - { issuer: c, jwksUri: https://c.example/jwks, jwksFile: /etc/jwks.json }
    - { issuer: a, jwksUri: "http://127.0.0.1:8080/jwks", jwks: { timeout: 0s } }
`);
    assert.deepEqual(
      issues.map((i) => `${i.path}: ${i.message}`),
      [
        'auth.issuers[0].jwksUri: expected an https URL (plain http only for a loopback address)',
        'auth.issuers[0].algorithms[0]: refused: "none" and the HMAC algorithms (HS*) are never accepted, only asymmetric signatures',
        'auth.issuers[0].algorithms[1]: refused: "none" and the HMAC algorithms (HS*) are never accepted, only asymmetric signatures',
        'auth.issuers[1]: needs a key source: jwksUri or jwksFile',
        'auth.issuers[1].clockTolerance: expected a duration such as 500ms, 30s, 5m or 1h (a whole number and a unit: ms, s, m, h, d)',
        'auth.issuers[2]: give jwksUri or jwksFile, not both',
        'auth.issuers[3].issuer: duplicate of issuers[0].issuer',
        'auth.issuers[3].jwks.timeout: must be more than 0s',
      ],
    );
  });

  it('checks route scopes, credentials and identity header names', () => {
    const issues = issuesOf(`publicUrl: https://mcp.example.com
auth: { mode: jwt, issuers: [{ issuer: a, jwksFile: /etc/jwks.json }] }
upstreams:
  tools:
    instances: [http://127.0.0.1:3000]
    credentials: { type: identity-headers, headers: { subject: Authorization, issuer: X-Same, tenant: x-same, scopes: mcp-x } }
  other:
    instances: [http://127.0.0.1:3001]
    credentials: { type: bearer, token: "two words" }
routes:
  - { path: /mcp, upstream: tools, scopes: ["has space", 'quo"te', ok] }
`);
    assert.deepEqual(
      issues.map((i) => `${i.path}: ${i.message}`),
      [
        'upstreams.tools.credentials.headers.subject: this header is set by the gateway or the MCP transport; pick another name',
        'upstreams.tools.credentials.headers.tenant: same header as issuer',
        'upstreams.tools.credentials.headers.scopes: this header is set by the gateway or the MCP transport; pick another name',
        'upstreams.other.credentials.token: expected a bearer token (token68: letters, digits, "-._~+/", then "=" padding)',
        'routes[0].scopes[0]: expected an OAuth scope: printable ASCII without spaces, quotes or backslashes',
        'routes[0].scopes[1]: expected an OAuth scope: printable ASCII without spaces, quotes or backslashes',
      ],
    );
  });

  it('refuses scopes and identity headers without authentication', () => {
    const issues = issuesOf(`publicUrl: https://mcp.example.com
auth: { mode: none }
upstreams:
  tools: { instances: [http://127.0.0.1:3000], credentials: { type: identity-headers } }
routes:
  - { path: /mcp, upstream: tools, scopes: [read] }
`);
    assert.deepEqual(
      issues.map((i) => `${i.path}: ${i.message}`),
      [
        'upstreams.tools.credentials.type: identity-headers needs auth.mode jwt: without authentication there is no identity to send',
        'routes[0].scopes: needs auth.mode jwt: without authentication there are no scopes to check',
      ],
    );
  });

  it('takes a bearer token from the environment without ever printing it', () => {
    const text = `${BASE.replace('{ instances: [http://127.0.0.1:3000] }', '{ instances: [http://127.0.0.1:3000], credentials: { type: bearer, token: "${UP_TOKEN}" } }')}auth: { mode: none }\n`;
    const config = parseConfig(text, { env: { UP_TOKEN: 's3cr3t-Token_1=' } });
    assert.deepEqual(config.upstreams.tools?.credentials, { type: 'bearer', token: 's3cr3t-Token_1=' });
    const issues = issuesOf(text, { UP_TOKEN: 'not a token' });
    assert.ok(issues.every((i) => !i.message.includes('not a token')));
  });
});
