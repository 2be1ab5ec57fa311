/** The policy keys of token exchange (upstreams.*.credentials) and of per-principal limits. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../src/config/index.js';
import { findIssue, issuesOf } from './policies.js';

const JWT = `publicUrl: https://mcp.example.com
auth: { mode: jwt, issuers: [{ issuer: https://auth.example.com/, jwksUri: https://auth.example.com/jwks }] }
routes: [{ path: /mcp, upstream: tools }]
`;

function withCredentials(credentials: string, auth = JWT): string {
  return `${auth}upstreams:\n  tools:\n    instances: [http://10.0.0.5:3000]\n    credentials: ${credentials}\n`;
}

describe('token-exchange credentials', () => {
  it('fills the defaults and keeps the secret from the environment', () => {
    const config = parseConfig(
      withCredentials('{ type: token-exchange, tokenEndpoint: "https://auth.example.com/token", resource: "https://tools.internal/mcp", client: { method: client_secret_basic, id: taskgate, secret: "${SECRET}" } }'),
      { env: { SECRET: 's3cret' }, source: 'test.yaml' },
    );
    assert.deepEqual(config.upstreams.tools!.credentials, {
      type: 'token-exchange',
      tokenEndpoint: 'https://auth.example.com/token',
      resource: 'https://tools.internal/mcp',
      scopes: [],
      client: { method: 'client_secret_basic', id: 'taskgate', secret: 's3cret' },
      timeout: 5000,
      cache: { maxEntries: 10_000, refreshBefore: 30_000 },
    });
  });

  it('refuses a plain-http token endpoint off loopback, a missing target, and a key that is not PKCS#8', () => {
    const issues = issuesOf(
      withCredentials('{ type: token-exchange, tokenEndpoint: "http://auth.example.com/token", client: { method: private_key_jwt, id: taskgate, privateKey: "not a key" } }'),
    );
    assert.match(findIssue(issues, 'upstreams.tools.credentials.tokenEndpoint').message, /https/);
    assert.match(findIssue(issues, 'upstreams.tools.credentials.client.privateKey').message, /PKCS#8/);
    const target = issuesOf(withCredentials('{ type: token-exchange, tokenEndpoint: "https://auth.example.com/token", client: { method: client_secret_post, id: a, secret: b } }'));
    assert.match(findIssue(target, 'upstreams.tools.credentials.audience').message, /audience, resource or both/);
  });

  it('needs auth.mode jwt', () => {
    const issues = issuesOf(
      withCredentials(
        '{ type: token-exchange, tokenEndpoint: "http://127.0.0.1:9000/token", audience: tools, client: { method: client_secret_post, id: a, secret: b } }',
        'publicUrl: https://mcp.example.com\nauth: { mode: none }\nroutes: [{ path: /mcp, upstream: tools }]\n',
      ),
    );
    assert.match(findIssue(issues, 'upstreams.tools.credentials.type').message, /needs auth.mode jwt/);
  });
});

describe('toolLimits and the enumeration action', () => {
  it('is off by default, and takes rates, caps and per-tool limits with units', () => {
    const off = parseConfig(withCredentials('{ type: none }'), { env: {}, source: 'test.yaml' });
    assert.deepEqual(off.toolLimits, { slotTtl: 600_000, tools: {} });
    assert.equal(off.audit.enumeration.action, 'warn');
    const on = parseConfig(
      `${withCredentials('{ type: none }')}toolLimits: { rate: { limit: 60 }, concurrency: 4, tools: { slow_scan: { concurrency: 1, rate: { limit: 5, window: 1h } } } }
audit: { enumeration: { action: suspend } }
`,
      { env: {}, source: 'test.yaml' },
    );
    assert.deepEqual(on.toolLimits, {
      rate: { limit: 60, window: 60_000 },
      concurrency: 4,
      slotTtl: 600_000,
      tools: { slow_scan: { concurrency: 1, rate: { limit: 5, window: 3_600_000 } } },
    });
    assert.equal(on.audit.enumeration.action, 'suspend');
  });

  it('refuses a zero cap and an unknown action', () => {
    const issues = issuesOf(`${withCredentials('{ type: none }')}toolLimits: { concurrency: 0 }\naudit: { enumeration: { action: block } }\n`);
    findIssue(issues, 'toolLimits.concurrency');
    findIssue(issues, 'audit.enumeration.action');
  });
});

describe('the example policy', () => {
  it('has a token-exchange block that validates once uncommented, with its key in the environment', async () => {
    const { readFile } = await import('node:fs/promises');
    const { exportPKCS8, generateKeyPair } = await import('jose');
    const text = await readFile(new URL('../../../config/taskgate.example.yaml', import.meta.url), 'utf8');
    const start = text.indexOf('    # credentials:\n    #   type: token-exchange');
    const end = text.indexOf('refreshBefore: 30s', start) + 'refreshBefore: 30s'.length;
    assert.ok(start > 0 && end > start, 'the commented block is in the example');
    const block = text.slice(start, end).replace(/^ {4}# /gm, '    ');
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const config = parseConfig(text.slice(0, start) + block + text.slice(end), { env: { TASKGATE_CLIENT_KEY: await exportPKCS8(privateKey) }, source: 'example' });
    const credentials = config.upstreams.search!.credentials;
    assert.equal(credentials.type, 'token-exchange');
    assert.equal(credentials.type === 'token-exchange' && credentials.client.method, 'private_key_jwt');
    assert.equal(config.toolLimits.tools.export_payroll?.concurrency, 1);
    assert.equal(config.audit.enumeration.action, 'suspend');
  });
});
