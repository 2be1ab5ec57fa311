/**
 * JwtVerifier with real key sets: the harness's JWKS server over HTTP, a misbehaving
 * endpoint, and tokens minted per test.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { JwtVerifier, TokenRejectedError } from '../../../src/auth/jwt-verifier.js';
import { KeysUnavailableError, createRemoteKeySet, type RefreshOutcome } from '../../../src/auth/key-sets.js';
import { issuerSchema } from '../../../src/config/sections/auth.js';
import { startJwksServer, type JwksServer } from '../../../examples/identity-provider/issuer.js';
import { waitFor as until } from '../../support/wait.js';

const RESOURCE = 'https://mcp.example.com/mcp';

function rejection(outcome: string, description: string) {
  return (error: unknown) => error instanceof TokenRejectedError && error.outcome === outcome && error.description === description;
}

describe('JwtVerifier', () => {
  let jwks: JwksServer;
  let second: JwksServer;
  let verifier: JwtVerifier;
  const refreshes: RefreshOutcome[] = [];
  before(async () => {
    jwks = await startJwksServer();
    second = await startJwksServer({ algs: ['PS256'] });
    const trusted = (server: JwksServer, extra: Record<string, unknown> = {}) => {
      const config = issuerSchema.parse({ issuer: server.issuer, jwksUri: server.url, ...extra });
      return { config, keys: createRemoteKeySet(server.url, { cooldownMs: 100, maxAgeMs: 60_000, timeoutMs: 1000, onRefresh: (o) => refreshes.push(o) }) };
    };
    verifier = new JwtVerifier([
      trusted(jwks, { claims: { tenant: 'tid' } }),
      trusted(second, { audiences: ['urn:shared-audience'], algorithms: ['PS256'] }),
    ]);
    await until(() => verifier.ready);
  });
  after(async () => {
    verifier.close();
    await jwks.close();
    await second.close();
  });

  it('verifies RSA and EC tokens and returns the principal and exp', async () => {
    for (const key of jwks.keys) {
      const token = await jwks.mint({ aud: RESOURCE, sub: 'alice', tid: 'acme', scope: 'x' }, { key });
      const verified = await verifier.verifyToken(token, RESOURCE);
      assert.deepEqual(verified.principal, { issuer: jwks.issuer, subject: 'alice', tenant: 'acme', scopes: ['x'] });
      assert.equal(typeof verified.exp, 'number');
    }
    assert.deepEqual(refreshes.slice(0, 2), ['ok', 'ok']);
  });

  it('picks the issuer by iss, each with its own audiences and algorithms', async () => {
    const token = await second.mint({ aud: 'urn:shared-audience' });
    assert.equal((await verifier.verifyToken(token, RESOURCE)).principal.issuer, second.issuer);
    await assert.rejects(verifier.verifyToken(await second.mint({ aud: RESOURCE }), RESOURCE), rejection('invalid', 'token audience is not this resource'));
    // A token from the first issuer's keys presented under the second issuer's name.
    await assert.rejects(verifier.verifyToken(await jwks.mint({ iss: second.issuer, aud: 'urn:shared-audience' }), RESOURCE), rejection('invalid', 'signature algorithm not accepted'));
  });

  it('allows clock skew up to clockTolerance, and requires exp', async () => {
    await verifier.verifyToken(await jwks.mint({ aud: RESOURCE }, { expiresIn: -10 }), RESOURCE);
    await assert.rejects(verifier.verifyToken(await jwks.mint({ aud: RESOURCE }, { expiresIn: -60 }), RESOURCE), rejection('expired', 'token expired'));
    await assert.rejects(verifier.verifyToken(await jwks.mint({ aud: RESOURCE, exp: undefined }), RESOURCE), rejection('invalid', 'token has no expiry'));
  });

  it('calls malformed what is not a JWT', async () => {
    for (const token of ['abc', 'a.b.c', 'eyJhbGciOiJSUzI1NiJ9.e30']) {
      await assert.rejects(verifier.verifyToken(token, RESOURCE), rejection('malformed', 'not a signed JWT'));
    }
  });
});

describe('remote key sets that cannot be fetched', () => {
  let endpoint: ReturnType<typeof createServer>;
  let url: string;
  let answer: { status: number; body: string };
  before(async () => {
    endpoint = createServer((_req, res) => {
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/jwks`;
  });
  after(async () => {
    endpoint.closeAllConnections();
    await new Promise((resolve) => endpoint.close(resolve));
  });

  for (const bad of [
    { status: 500, body: '{"keys":[]}' },
    { status: 200, body: 'not json' },
    { status: 200, body: '{"keys":"nope"}' },
    { status: 302, body: '' },
  ]) {
    it(`are unavailable, not a token verdict, for HTTP ${bad.status} ${JSON.stringify(bad.body)}`, async () => {
      answer = bad;
      const outcomes: unknown[] = [];
      const keys = createRemoteKeySet(url, { cooldownMs: 50, maxAgeMs: 60_000, timeoutMs: 1000, onRefresh: (o, error) => outcomes.push([o, String(error)]) });
      try {
        await until(() => outcomes.length >= 2);
        assert.equal(keys.ready, false);
        const config = issuerSchema.parse({ issuer: 'https://i.example', jwksUri: url });
        const verifier = new JwtVerifier([{ config, keys }]);
        const { SignJWT, generateKeyPair } = await import('jose');
        const { privateKey } = await generateKeyPair('RS256');
        const token = await new SignJWT({ iss: 'https://i.example', sub: 's', aud: RESOURCE, exp: 2e9 }).setProtectedHeader({ alg: 'RS256', kid: 'k' }).sign(privateKey);
        await assert.rejects(verifier.verifyToken(token, RESOURCE), KeysUnavailableError);
        assert.ok(outcomes.every((o) => (o as string[])[0] === 'error'));
      } finally {
        keys.close();
      }
    });
  }
});
