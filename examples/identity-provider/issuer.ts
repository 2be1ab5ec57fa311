/**
 * A small OAuth token issuer for the demo and the tests: signing keys made at start (never
 * written anywhere), a real JWKS endpoint on loopback (node:http), and tokens minted with
 * jose. The key set can change while it runs (rotation tests), and it can stop and start
 * again on the same port (an issuer that is down).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTHeaderParameters, type JWTPayload } from 'jose';

export type TestKeyAlg = 'RS256' | 'PS256' | 'ES256' | 'EdDSA';

/** A signing key made for one test run; never written anywhere. */
export interface TestKey {
  readonly kid: string;
  readonly alg: TestKeyAlg;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** The public JWK as the JWKS serves it. */
  readonly jwk: JWK;
}

export async function createTestKey(alg: TestKeyAlg = 'RS256', kid: string = randomUUID()): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicKey, jwk };
}

export interface MintOptions {
  /** Signing key; the server's first published key by default. */
  key?: TestKey;
  /** Seconds from now; negative for an expired token. Default 300. */
  expiresIn?: number;
  /** Extra protected-header fields (a forged kid, say). */
  header?: Partial<JWTHeaderParameters>;
}

/** A real JWKS endpoint (node:http) whose published keys a test can change while it runs. */
export interface JwksServer {
  /** The JWKS URI. */
  readonly url: string;
  /** The iss its tokens carry. */
  readonly issuer: string;
  /** The published keys; change with addKey / removeKey. */
  readonly keys: TestKey[];
  /** Requests served so far. */
  readonly fetches: number;
  addKey(alg?: TestKeyAlg): Promise<TestKey>;
  removeKey(kid: string): void;
  /** Signs a token for `claims` (iss, sub, iat and exp filled in unless given). */
  mint(claims: JWTPayload, options?: MintOptions): Promise<string>;
  /** Stops listening; start() listens again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

let issuerCount = 0;

export async function startJwksServer(options: { algs?: TestKeyAlg[] } = {}): Promise<JwksServer> {
  const keys: TestKey[] = [];
  for (const alg of options.algs ?? ['RS256', 'ES256']) keys.push(await createTestKey(alg));
  const issuer = `https://issuer-${++issuerCount}.taskgate.test`;
  let fetches = 0;
  let port = 0;
  let server: Server | undefined;
  const listen = async () => {
    const http = createServer((_req, res) => {
      fetches += 1;
      res.writeHead(200, { 'content-type': 'application/jwk-set+json' });
      res.end(JSON.stringify({ keys: keys.map((k) => k.jwk) }));
    });
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, '127.0.0.1', () => resolve());
    });
    port = (http.address() as AddressInfo).port;
    server = http;
  };
  const stop = async () => {
    const http = server;
    server = undefined;
    if (!http) return;
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  await listen();
  return {
    get url() {
      return `http://127.0.0.1:${port}/jwks.json`;
    },
    issuer,
    keys,
    get fetches() {
      return fetches;
    },
    async addKey(alg = 'RS256') {
      const key = await createTestKey(alg);
      keys.push(key);
      return key;
    },
    removeKey(kid) {
      const index = keys.findIndex((k) => k.kid === kid);
      if (index !== -1) keys.splice(index, 1);
    },
    async mint(claims, mintOptions = {}) {
      const key = mintOptions.key ?? keys[0]!;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, sub: 'user-1', iat: now, exp: now + (mintOptions.expiresIn ?? 300), ...claims })
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...mintOptions.header })
        .sign(key.privateKey);
    },
    stop,
    start: listen,
    close: stop,
  };
}
