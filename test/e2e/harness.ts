/**
 * Starts real peers for end-to-end tests: example MCP servers (the SDK's own server code),
 * a JWKS server with keys generated per test, and a gateway in front of them, every listener
 * on 127.0.0.1 port 0.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createParser } from 'eventsource-parser';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTHeaderParameters, type JWTPayload } from 'jose';
import pino from 'pino';
import { parseConfig, type Config } from '../../src/config/index.js';
import { buildGateway, type Gateway } from '../../src/gateway.js';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';

export interface GatewayUnderTest {
  gateway: Gateway;
  /** The MCP endpoint through the gateway. */
  url: string;
  adminUrl: string;
  close(): Promise<void>;
}

export type PolicyOverrides = Record<string, unknown>;

/** A policy for `upstreamUrls` (full MCP endpoint URLs of one upstream), as the config parser builds it. */
export function testPolicy(upstreamUrls: string[], overrides: PolicyOverrides = {}): Config {
  const first = new URL(upstreamUrls[0]!);
  const policy = {
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    publicUrl: 'http://127.0.0.1',
    // Existing suites test the proxy, not authentication; test/e2e/auth*.test.ts override this.
    auth: { mode: 'none' },
    upstreams: { tools: { instances: upstreamUrls.map((u) => new URL(u).origin), cooldown: '30s' } },
    routes: [{ path: '/mcp', upstream: 'tools', upstreamPath: first.pathname }],
    logging: { level: process.env.TASKGATE_TEST_LOG ?? 'silent' },
    ...overrides,
  };
  return parseConfig(JSON.stringify(policy), { env: {}, source: 'test-policy' });
}

export async function startGateway(config: Config): Promise<GatewayUnderTest> {
  const logger = pino({ level: config.logging.level });
  const gateway = await buildGateway(config, { logger });
  const { url, adminUrl } = await gateway.listen();
  return {
    gateway,
    url: `${url.replace('localhost', '127.0.0.1')}/mcp`,
    adminUrl,
    close: () => gateway.close(),
  };
}

export interface Stack {
  servers: ExampleServer[];
  gw: GatewayUnderTest;
  close(): Promise<void>;
}

/** `count` example servers behind one gateway route. */
export async function startStack(
  options: { count?: number; server?: Parameters<typeof startExampleServer>[0]; policy?: PolicyOverrides } = {},
): Promise<Stack> {
  const servers: ExampleServer[] = [];
  for (let i = 0; i < (options.count ?? 1); i++) {
    servers.push(await startExampleServer({ name: `backend-${i}`, ...options.server }));
  }
  const gw = await startGateway(testPolicy(servers.map((s) => s.url), options.policy));
  return {
    servers,
    gw,
    async close() {
      await gw.close();
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}

/** The protocol headers a 2025-11-25 client sends on a POST. */
export const LEGACY_POST_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
} as const;

export function initializeBody(id: number | string = 1): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-test', version: '0' } },
  });
}

/** Reads an SSE or JSON reply body into the JSON-RPC messages it carries. */
export async function readMessages(response: Response): Promise<unknown[]> {
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  if (type.includes('application/json')) return [JSON.parse(text)];
  const messages: unknown[] = [];
  const parser = createParser({
    onEvent: (event) => {
      if (event.data.trim()) messages.push(JSON.parse(event.data));
    },
  });
  parser.feed(text);
  return messages;
}

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
