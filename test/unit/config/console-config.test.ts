/** The `console` section: off by default, credentials required once on, secrets from the environment. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../src/config/index.js';
import { findIssue, issuesOf, MINIMAL } from './policies.js';

const TOKEN = 'k'.repeat(44);

describe('console policy', () => {
  it('is off by default, with redacted principals', () => {
    const config = parseConfig(MINIMAL, { env: {}, source: 'test.yaml' });
    assert.deepEqual(config.console, { enabled: false, tokens: [], principals: 'redacted', maxScan: 5000, maxSuspension: 86_400_000 });
  });

  it('takes a static token from the environment and a JWT issuer with its scopes', () => {
    const config = parseConfig(
      `${MINIMAL}console:
  enabled: true
  principals: shown
  tokens: [{ name: oncall, role: operator, token: "\${OPS}" }]
  jwt:
    issuers: [{ issuer: https://sso.example.com, jwksUri: https://sso.example.com/jwks, audiences: [taskgate-console] }]
`,
      { env: { OPS: TOKEN }, source: 'test.yaml' },
    );
    assert.equal(config.console.tokens[0]!.token, TOKEN);
    assert.equal(config.console.jwt!.viewerScope, 'taskgate.console.view');
    assert.equal(config.console.jwt!.operatorScope, 'taskgate.console.operate');
  });

  it('refuses an enabled console without credentials', () => {
    assert.match(findIssue(issuesOf(`${MINIMAL}console: { enabled: true }\n`), 'console.enabled').message, /needs operator credentials/);
  });

  it('refuses a short token without quoting it', () => {
    const issue = findIssue(issuesOf(`${MINIMAL}console: { enabled: true, tokens: [{ name: a, role: viewer, token: "\${T}" }] }\n`, { T: 'hunter2hunter2' }), 'console.tokens[0].token');
    assert.match(issue.message, /at least 32 characters/);
    assert.doesNotMatch(issue.message, /hunter2/);
  });

  it('refuses duplicate token names, issuers without audiences, and one scope for both roles', () => {
    const issues = issuesOf(`${MINIMAL}console:
  enabled: true
  tokens: [{ name: a, role: viewer, token: "${TOKEN}" }, { name: a, role: operator, token: "${'m'.repeat(40)}" }]
  jwt:
    issuers: [{ issuer: https://sso.example.com, jwksUri: https://sso.example.com/jwks }]
    viewerScope: ops
    operatorScope: ops
`);
    assert.match(findIssue(issues, 'console.tokens[1].name').message, /duplicate of tokens\[0\]\.name/);
    assert.match(findIssue(issues, 'console.jwt.issuers[0].audiences').message, /required/);
    assert.match(findIssue(issues, 'console.jwt.operatorScope').message, /must differ/);
  });

  it('refuses an unknown role', () => {
    findIssue(issuesOf(`${MINIMAL}console: { enabled: true, tokens: [{ name: a, role: admin, token: "${TOKEN}" }] }\n`), 'console.tokens[0].role');
  });
});
