/**
 * Authentication end to end: a real JWKS server with keys made per run, tokens minted per
 * test, the example MCP server behind the gateway. Every refused request must get the right
 * status and challenge, and must not reach the backend at all.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { exportSPKI, SignJWT } from 'jose';
import { request } from 'undici';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import {
  LEGACY_POST_HEADERS,
  createTestKey,
  initializeBody,
  startGateway,
  startJwksServer,
  testPolicy,
  type GatewayUnderTest,
  type JwksServer,
  type PolicyOverrides,
  waitReady,
} from './support/harness.js';
import { connectRaw, parseResponse, postHead } from './support/raw-socket.js';

const RESOURCE = 'http://127.0.0.1/mcp';
const OTHER_RESOURCE = 'http://127.0.0.1/other';
const METADATA = 'http://127.0.0.1/.well-known/oauth-protected-resource/mcp';

function jwtAuth(jwks: JwksServer, extra: Record<string, unknown> = {}): PolicyOverrides {
  return { auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url, jwks: { cooldown: '100ms' }, ...extra }] } };
}

function post(url: string, headers: Record<string, string | string[]> = {}) {
  return request(url, { method: 'POST', headers: { ...LEGACY_POST_HEADERS, ...headers }, body: initializeBody() });
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

interface RefusalCase {
  name: string;
  /** Headers (or a query string) to send; built per test so tokens are fresh. */
  request: () => Promise<{ headers?: Record<string, string | string[]>; query?: string; path?: string }>;
  status?: number;
  /** The error_description, or undefined when no token counts as sent (no error attribute). */
  description?: string;
}

describe('bearer tokens that are refused never reach the backend', () => {
  let jwks: JwksServer;
  let backend: ExampleServer;
  let gw: GatewayUnderTest;
  before(async () => {
    jwks = await startJwksServer();
    backend = await startExampleServer();
    gw = await startGateway(
      testPolicy([backend.url], {
        ...jwtAuth(jwks),
        routes: [
          { path: '/mcp', upstream: 'tools', upstreamPath: '/mcp', scopes: ['mcp:use'] },
          { path: '/other', upstream: 'tools', upstreamPath: '/mcp' },
        ],
        // Large enough for the 64 KB token to reach the gateway rather than Node's 431.
        limits: { maxHeaderBytes: '128KiB' },
      }),
    );
    await waitReady(gw);
  });
  after(async () => {
    await gw.close();
    await backend.close();
    await jwks.close();
  });

  const good = (claims: Record<string, unknown> = {}) => jwks.mint({ aud: RESOURCE, scope: 'mcp:use', ...claims });
  const bearer = async (token: Promise<string> | string) => ({ headers: { authorization: `Bearer ${await token}` } });

  const cases: RefusalCase[] = [
    { name: 'no Authorization header', request: async () => ({}) },
    { name: 'another scheme', request: async () => ({ headers: { authorization: 'Basic dXNlcjpwYXNz' } }) },
    { name: 'a token only in the query string', request: async () => ({ query: `?access_token=${await good()}` }) },
    {
      name: 'two Authorization headers',
      request: async () => ({ headers: { authorization: [`Bearer ${await good()}`, `Bearer ${await good()}`] } }),
      description: 'more than one Authorization header',
    },
    {
      name: 'two tokens in one header',
      request: async () => ({ headers: { authorization: `Bearer ${await good()}, Bearer ${await good()}` } }),
      description: 'not a single bearer token',
    },
    {
      name: 'a query token next to the header',
      request: async () => ({ ...(await bearer(good())), query: `?access_token=${await good()}` }),
      description: 'access_token in the query string is not accepted',
    },
    { name: 'empty bearer token', request: async () => ({ headers: { authorization: 'Bearer ' } }), description: 'empty bearer token' },
    { name: 'not a JWT', request: () => bearer('not-a-jwt'), description: 'not a signed JWT' },
    {
      name: 'alg none',
      request: () => bearer(`${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ iss: jwks.issuer, sub: 'x', aud: RESOURCE, exp: 2e9 })}.`),
      description: 'signature algorithm not accepted',
    },
    {
      name: 'HS256 signed with the RSA public key (algorithm confusion)',
      request: async () => {
        const rsa = jwks.keys.find((k) => k.alg === 'RS256')!;
        const secret = new TextEncoder().encode(await exportSPKI(rsa.publicKey));
        const now = Math.floor(Date.now() / 1000);
        const token = await new SignJWT({ iss: jwks.issuer, sub: 'x', aud: RESOURCE, scope: 'mcp:use', exp: now + 300 })
          .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
          .sign(secret);
        return bearer(token);
      },
      description: 'signature algorithm not accepted',
    },
    { name: 'expired', request: () => bearer(jwks.mint({ aud: RESOURCE, scope: 'mcp:use' }, { expiresIn: -120 })), description: 'token expired' },
    { name: 'nbf in the future', request: () => bearer(good({ nbf: Math.floor(Date.now() / 1000) + 600 })), description: 'token not yet valid' },
    { name: 'wrong issuer', request: () => bearer(good({ iss: 'https://evil.taskgate.test' })), description: 'untrusted issuer' },
    { name: 'wrong audience', request: () => bearer(good({ aud: 'https://elsewhere.taskgate.test/mcp' })), description: 'token audience is not this resource' },
    { name: 'another route\'s audience', request: () => bearer(good({ aud: OTHER_RESOURCE })), description: 'token audience is not this resource' },
    {
      name: 'unknown kid',
      request: async () => bearer(jwks.mint({ aud: RESOURCE, scope: 'mcp:use' }, { key: await createTestKey('RS256', 'nobody-knows-me') })),
      description: 'no key matches the token',
    },
    {
      name: 'bad signature (right kid, wrong key)',
      request: async () => {
        const impostor = await createTestKey('RS256', jwks.keys[0]!.kid);
        return bearer(jwks.mint({ aud: RESOURCE, scope: 'mcp:use' }, { key: impostor }));
      },
      description: 'signature verification failed',
    },
    { name: 'no subject', request: () => bearer(good({ sub: undefined })), description: 'token has no subject' },
    { name: 'a 64 KB token', request: async () => bearer(`ey${'A'.repeat(64 * 1024)}`), description: 'bearer token too long' },
    { name: 'missing scope', request: () => bearer(good({ scope: 'other:thing' })), status: 403 },
  ];

  for (const c of cases) {
    it(`refuses ${c.name}`, async () => {
      backend.stats.reset();
      const { headers = {}, query = '', path = '/mcp' } = await c.request();
      const res = await post(`${new URL(gw.url).origin}${path}${query}`, headers);
      const body = (await res.body.json()) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
      const status = c.status ?? 401;
      assert.equal(res.statusCode, status);
      assert.deepEqual([body.jsonrpc, body.id, body.error.code], ['2.0', null, -32600]);
      const expected =
        status === 403
          ? `Bearer error="insufficient_scope", error_description="the token lacks a scope this resource requires", scope="mcp:use", resource_metadata="${METADATA}"`
          : c.description === undefined
            ? `Bearer scope="mcp:use", resource_metadata="${METADATA}"`
            : `Bearer error="invalid_token", error_description="${c.description}", scope="mcp:use", resource_metadata="${METADATA}"`;
      assert.equal(res.headers['www-authenticate'], expected);
      assert.deepEqual(backend.stats.requests, [], 'the backend must receive nothing');
    });
  }

  it('accepts a good token on its own route, and the same kind of token for /other there', async () => {
    backend.stats.reset();
    const res = await post(gw.url, (await bearer(good())).headers);
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const other = await post(`${new URL(gw.url).origin}/other`, (await bearer(jwks.mint({ aud: OTHER_RESOURCE }))).headers);
    assert.equal(other.statusCode, 200, 'a route without scopes needs none');
    await other.body.text();
    assert.equal(backend.stats.requests.length, 2);
  });

  it('serves RFC 9728 metadata per route and at the root', async () => {
    const origin = new URL(gw.url).origin;
    const perPath = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(perPath.status, 200);
    const doc = { resource: RESOURCE, authorization_servers: [jwks.issuer], scopes_supported: ['mcp:use'], bearer_methods_supported: ['header'] };
    assert.deepEqual(await perPath.json(), doc);
    assert.deepEqual(await (await fetch(`${origin}/.well-known/oauth-protected-resource`)).json(), doc);
    assert.deepEqual(await (await fetch(`${origin}/.well-known/oauth-protected-resource/other`)).json(), {
      resource: OTHER_RESOURCE,
      authorization_servers: [jwks.issuer],
      bearer_methods_supported: ['header'],
    });
  });

  it('pays for one signature check per token, then answers from the cache', async () => {
    const count = async (outcome: string) => {
      const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
      return Number(new RegExp(`taskgate_jwt_verifications_total\\{outcome="${outcome}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const [ok, cached] = [await count('ok'), await count('cached')];
    const token = await good({ jti: 'cache-me' });
    for (let i = 0; i < 3; i++) {
      const res = await post(gw.url, { authorization: `Bearer ${token}` });
      assert.equal(res.statusCode, 200);
      await res.body.text();
    }
    assert.equal(await count('ok'), ok + 1);
    assert.equal(await count('cached'), cached + 2);
    assert.ok((await count('invalid')) > 0, 'the refusals above were counted');
  });
});

describe('what reaches the backend', () => {
  let jwks: JwksServer;
  let backend: ExampleServer;
  const gateways: GatewayUnderTest[] = [];
  before(async () => {
    jwks = await startJwksServer();
    backend = await startExampleServer();
  });
  after(async () => {
    await Promise.all(gateways.map((gw) => gw.close()));
    await backend.close();
    await jwks.close();
  });

  async function gatewayWith(credentials: unknown, claims: Record<string, unknown> = {}): Promise<GatewayUnderTest> {
    const gw = await startGateway(
      testPolicy([backend.url], {
        ...jwtAuth(jwks, { claims }),
        upstreams: { tools: { instances: [new URL(backend.url).origin], credentials } },
      }),
    );
    gateways.push(gw);
    await waitReady(gw);
    return gw;
  }

  const spoofed = { 'x-taskgate-subject': 'admin', 'x-taskgate-issuer': 'https://evil.taskgate.test', 'x-taskgate-anything': 'x' };

  it('forwards neither the client token nor client identity headers (credentials none)', async () => {
    const gw = await gatewayWith({ type: 'none' });
    backend.stats.reset();
    const res = await post(gw.url, { authorization: `Bearer ${await jwks.mint({ aud: RESOURCE })}`, ...spoofed });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const seen = backend.stats.requests.at(-1)!.headers;
    assert.equal(seen.authorization, undefined);
    assert.deepEqual(Object.keys(seen).filter((h) => h.startsWith('x-taskgate-')), []);
  });

  it('sends the verified principal in identity headers and replaces spoofed ones', async () => {
    const gw = await gatewayWith({ type: 'identity-headers', headers: { tenant: 'x-tenant' } }, { tenant: 'tid' });
    backend.stats.reset();
    const token = await jwks.mint({ aud: RESOURCE, sub: 'alice', tid: 'acme', client_id: 'cli-1', scope: 'a b' });
    const res = await post(gw.url, { authorization: `Bearer ${token}`, ...spoofed, 'x-tenant': 'evil-corp' });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const seen = backend.stats.requests.at(-1)!.headers;
    assert.equal(seen.authorization, undefined);
    assert.equal(seen['x-taskgate-subject'], 'alice');
    assert.equal(seen['x-taskgate-issuer'], jwks.issuer);
    assert.equal(seen['x-tenant'], 'acme');
    assert.equal(seen['x-taskgate-tenant'], undefined);
    assert.equal(seen['x-taskgate-client-id'], 'cli-1');
    assert.equal(seen['x-taskgate-scopes'], 'a b');
    assert.equal(seen['x-taskgate-anything'], undefined);
  });

  it('sends the gateway\'s own static bearer token, never the client\'s', async () => {
    const upstreamToken = randomBytes(24).toString('base64url');
    const gw = await gatewayWith({ type: 'bearer', token: upstreamToken });
    backend.stats.reset();
    const res = await post(gw.url, { authorization: `Bearer ${await jwks.mint({ aud: RESOURCE })}` });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    assert.equal(backend.stats.requests.at(-1)!.headers.authorization, `Bearer ${upstreamToken}`);
  });

  it('leaves a token above limits.maxHeaderBytes to Node: 431, and nothing forwarded', async () => {
    const gw = await gatewayWith({ type: 'none' });
    backend.stats.reset();
    // Node answers 431 and closes at once, while the headers are still arriving: an HTTP
    // client still writing them may see only the reset. A client that reads while it writes
    // sees the answer first, every time.
    const connection = await connectRaw(gw.url);
    await connection.write(postHead(gw.url, { ...LEGACY_POST_HEADERS, authorization: `Bearer ey${'A'.repeat(64 * 1024)}`, 'content-length': '2' })).catch(() => undefined);
    await connection.closed;
    assert.equal(parseResponse(connection.received()).status, 431);
    assert.deepEqual(backend.stats.requests, []);
  });
});
