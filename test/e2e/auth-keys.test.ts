/**
 * The issuer's keys over time: rotation without a restart, an identity provider that is
 * down at start (503, then 200 once it is up), one that goes down later (last good keys
 * still used), a local JWKS file, and readiness.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { buildGateway } from '../../src/gateway.js';
import { LEGACY_POST_HEADERS, initializeBody, startGateway, startJwksServer, testPolicy, type GatewayUnderTest, type JwksServer } from './support/harness.js';
import { waitFor } from '../support/wait.js';

const RESOURCE = 'http://127.0.0.1/mcp';

async function call(gw: GatewayUnderTest, token: string): Promise<number> {
  const res = await fetch(gw.url, { method: 'POST', headers: { ...LEGACY_POST_HEADERS, authorization: `Bearer ${token}` }, body: initializeBody() });
  await res.text();
  return res.status;
}

async function readiness(gw: GatewayUnderTest): Promise<{ status: number; checks: Record<string, boolean> }> {
  const res = await fetch(`${gw.adminUrl}/readyz`);
  return { status: res.status, checks: ((await res.json()) as { checks: Record<string, boolean> }).checks };
}

function policyFor(backend: ExampleServer, issuer: Record<string, unknown>, tokenCache = { maxTtl: '300ms' }) {
  return testPolicy([backend.url], { auth: { mode: 'jwt', issuers: [issuer], tokenCache } });
}

describe('remote key sets', () => {
  let backend: ExampleServer;
  let jwks: JwksServer;
  let gw: GatewayUnderTest | undefined;
  before(async () => {
    backend = await startExampleServer();
  });
  after(async () => {
    await backend.close();
  });

  const start = async (fast = true) => {
    gw = await startGateway(
      policyFor(backend, { issuer: jwks.issuer, jwksUri: jwks.url, jwks: fast ? { cooldown: '100ms', maxAge: '300ms' } : {} }),
    );
    return gw;
  };
  const stop = async () => {
    await gw?.close();
    gw = undefined;
    await jwks.close();
  };

  it('picks up a new kid without a restart, and drops a removed key once caches lapse', async () => {
    jwks = await startJwksServer({ algs: ['RS256'] });
    try {
      const gw = await start();
      const first = jwks.keys[0]!;
      const oldToken = await jwks.mint({ aud: RESOURCE });
      await waitFor(async () => (await call(gw, oldToken)) === 200, 'the first key to work');

      const rotated = await jwks.addKey('ES256');
      await sleep(150); // past the cooldown, so an unknown kid may refetch
      assert.equal(await call(gw, await jwks.mint({ aud: RESOURCE }, { key: rotated })), 200);

      jwks.removeKey(first.kid);
      // Past maxAge (the set is refetched), the token cache's maxTtl and the cooldown.
      await sleep(450);
      assert.equal(await call(gw, oldToken), 401, 'a cached token outlived its key');
      assert.equal(await call(gw, await jwks.mint({ aud: RESOURCE }, { key: first })), 401);
      assert.equal(await call(gw, await jwks.mint({ aud: RESOURCE }, { key: rotated })), 200);
    } finally {
      await stop();
    }
  });

  it('answers 503 while the JWKS is unreachable at start, then 200 once it is up, with no restart', async () => {
    jwks = await startJwksServer();
    await jwks.stop();
    try {
      const gw = await start();
      const token = await jwks.mint({ aud: RESOURCE });
      backend.stats.reset();
      const down = await fetch(gw.url, { method: 'POST', headers: { ...LEGACY_POST_HEADERS, authorization: `Bearer ${token}` }, body: initializeBody() });
      assert.equal(down.status, 503);
      assert.equal(down.headers.get('retry-after'), '5');
      assert.equal(((await down.json()) as { error: { code: number } }).error.code, -31004);
      assert.deepEqual(await readiness(gw), { status: 503, checks: { listener: true, store: true, auth: false } });
      assert.deepEqual(backend.stats.requests, []);

      await jwks.start();
      await waitFor(async () => (await readiness(gw)).status === 200, 'readiness once the JWKS is up');
      assert.equal(await call(gw, token), 200);
      const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
      assert.match(metrics, /taskgate_jwks_refreshes_total\{outcome="error"\} [1-9]/);
      assert.match(metrics, /taskgate_jwks_refreshes_total\{outcome="ok"\} [1-9]/);
      assert.match(metrics, /taskgate_jwt_verifications_total\{outcome="unavailable"\} 1\b/);
    } finally {
      await stop();
    }
  });

  it('keeps the last good keys when the JWKS goes away later; an unknown kid is then 503, not 401', async () => {
    jwks = await startJwksServer({ algs: ['RS256'] });
    try {
      const gw = await start();
      await waitFor(async () => (await readiness(gw)).status === 200, 'the first fetch');
      await jwks.stop();
      await sleep(350); // past maxAge: the next request refetches, and that fails
      assert.equal(await call(gw, await jwks.mint({ aud: RESOURCE })), 200);
      const stranger = await jwks.addKey('RS256');
      await sleep(150);
      assert.equal(await call(gw, await jwks.mint({ aud: RESOURCE }, { key: stranger })), 503);
    } finally {
      await stop();
    }
  });
});

describe('local key sets and mode none', () => {
  let backend: ExampleServer;
  let dir: string;
  before(async () => {
    backend = await startExampleServer();
    dir = await mkdtemp(join(tmpdir(), 'taskgate-jwks-'));
  });
  after(async () => {
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('verifies against a JWKS file and is ready at once', async () => {
    const jwks = await startJwksServer({ algs: ['EdDSA'] });
    await jwks.close(); // only its keys and minting are used
    const file = join(dir, 'jwks.json');
    await writeFile(file, JSON.stringify({ keys: jwks.keys.map((k) => k.jwk) }));
    const gw = await startGateway(policyFor(backend, { issuer: jwks.issuer, jwksFile: file }));
    try {
      assert.equal((await readiness(gw)).status, 200);
      assert.equal(await call(gw, await jwks.mint({ aud: RESOURCE })), 200);
    } finally {
      await gw.close();
    }
  });

  it('refuses to start with a missing JWKS file, naming the key', async () => {
    await assert.rejects(
      buildGateway(policyFor(backend, { issuer: 'https://x.taskgate.test', jwksFile: join(dir, 'missing.json') }), { logger: pino({ level: 'silent' }) }),
      /auth\.issuers\[0\]\.jwksFile: cannot read the key set file \(ENOENT\)/,
    );
  });

  it('still forwards neither Authorization nor identity headers without authentication', async () => {
    const gw = await startGateway(testPolicy([backend.url]));
    try {
      backend.stats.reset();
      const res = await fetch(gw.url, {
        method: 'POST',
        headers: { ...LEGACY_POST_HEADERS, authorization: 'Bearer client-token', 'x-taskgate-subject': 'admin' },
        body: initializeBody(),
      });
      assert.equal(res.status, 200);
      await res.text();
      const seen = backend.stats.requests.at(-1)!.headers;
      assert.equal(seen.authorization, undefined);
      assert.equal(seen['x-taskgate-subject'], undefined);
      assert.equal((await fetch(new URL('/.well-known/oauth-protected-resource', gw.url))).status, 404, 'no metadata without auth');
    } finally {
      await gw.close();
    }
  });

  it('warns at start when running without authentication', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const gateway = await buildGateway(testPolicy([backend.url]), { logger: pino({ level: 'warn' }, sink) });
    await gateway.close();
    const warning = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).find((l) => l.msg.startsWith('auth.mode is none'));
    assert.equal(warning?.level, 40);
  });
});
