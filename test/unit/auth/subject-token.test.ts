import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';
import pino from 'pino';
import { Writable } from 'node:stream';
import { SubjectToken } from '../../../src/auth/subject-token.js';
import { applyUpstreamCredentials, type CredentialsPolicy } from '../../../src/upstream/credentials/credentials-policy.js';

describe('SubjectToken', () => {
  it('gives its value only to reveal(): JSON, inspect, strings and pino see a placeholder', () => {
    const token = new SubjectToken('eyJ.secret.value');
    assert.equal(token.reveal(), 'eyJ.secret.value');
    assert.ok(!JSON.stringify({ token }).includes('secret'));
    assert.ok(!inspect({ token }).includes('secret'));
    assert.ok(!`${String(token)}`.includes('secret'));
    const lines: string[] = [];
    const log = pino(new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) }));
    log.info({ tg: { subjectToken: token } }, 'request');
    assert.ok(lines.length === 1 && !lines[0]!.includes('secret'));
  });
});

describe('applyUpstreamCredentials for token-exchange', () => {
  const policy: CredentialsPolicy = {
    credentials: { type: 'token-exchange', tokenEndpoint: 'https://as/token', audience: 'tools', scopes: [], client: { method: 'client_secret_post', id: 'a', secret: 'b' }, timeout: 1000, cache: { maxEntries: 1, refreshBefore: 0 } },
    strippedHeaders: new Set<string>(),
  };

  it('sends the exchanged token, never the client\'s', () => {
    const headers: Record<string, string> = { authorization: 'Bearer client-token', accept: 'application/json' };
    applyUpstreamCredentials(headers, policy, undefined, 'exchanged');
    assert.deepEqual(headers, { accept: 'application/json', authorization: 'Bearer exchanged' });
  });

  it('sends no credentials at all without an exchanged token', () => {
    const headers: Record<string, string> = { authorization: 'Bearer client-token' };
    applyUpstreamCredentials(headers, policy, undefined, undefined);
    assert.deepEqual(headers, {});
  });
});
