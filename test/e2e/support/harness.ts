/**
 * Starts real peers for end-to-end tests: example MCP servers (the SDK's own server code),
 * a JWKS server with keys generated per test, and a gateway in front of them, every listener
 * on 127.0.0.1 port 0.
 */
import assert from 'node:assert/strict';
import pino from 'pino';
import { parseConfig, type Config } from '../../../src/config/index.js';
import { buildGateway, type Gateway, type GatewayDeps } from '../../../src/gateway.js';
import { startExampleServer, type ExampleServer } from '../../../examples/mcp-server/server.js';
import { waitFor } from '../../support/wait.js';

export interface GatewayUnderTest {
  gateway: Gateway;
  /** The MCP endpoint through the gateway. */
  url: string;
  adminUrl: string;
  close(): Promise<void>;
}

export type PolicyOverrides = Record<string, unknown>;

/** A policy for `upstreamUrls` (full MCP endpoint URLs of one upstream), as the config parser builds it. */
export function testPolicy(upstreamUrls: string[], overrides: PolicyOverrides = {}, bridge: 'auto' | 'off' = 'off'): Config {
  const first = new URL(upstreamUrls[0]!);
  const policy = {
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    publicUrl: 'http://127.0.0.1',
    // Existing suites test the proxy, not authentication; test/e2e/auth*.test.ts override this.
    auth: { mode: 'none' },
    // Suites about other things count what reaches their backends: the bridge's probes
    // (src/bridge/) stay out of those counts. The bridge's own suites, and any suite that sets
    // its own upstreams, run with the default (bridge: auto).
    upstreams: { tools: { instances: upstreamUrls.map((u) => new URL(u).origin), cooldown: '30s', bridge } },
    routes: [{ path: '/mcp', upstream: 'tools', upstreamPath: first.pathname }],
    logging: { level: process.env.TASKGATE_TEST_LOG ?? 'silent' },
    ...overrides,
  };
  return parseConfig(JSON.stringify(policy), { env: {}, source: 'test-policy' });
}

export async function startGateway(config: Config, deps: GatewayDeps = {}): Promise<GatewayUnderTest> {
  const logger = deps.logger ?? pino({ level: config.logging.level });
  const gateway = await buildGateway(config, { ...deps, logger });
  const { url, adminUrl } = await gateway.listen();
  // The gateway's own probes of the backends (src/bridge/) are over before a test counts what reaches them.
  await gateway.bridge.generations.settled();
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
  options: { count?: number; server?: Parameters<typeof startExampleServer>[0]; policy?: PolicyOverrides; bridge?: 'auto' | 'off' } = {},
): Promise<Stack> {
  const servers: ExampleServer[] = [];
  for (let i = 0; i < (options.count ?? 1); i++) {
    servers.push(await startExampleServer({ name: `backend-${i}`, ...options.server }));
  }
  const gw = await startGateway(testPolicy(servers.map((s) => s.url), options.policy, options.bridge));
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

/** A 2025 session opened with raw requests: initialize, then notifications/initialized; its id. */
export async function initializeSession(url: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: LEGACY_POST_HEADERS, body: initializeBody() });
  assert.equal(res.status, 200);
  const sessionId = res.headers.get('mcp-session-id');
  assert.ok(sessionId, 'initialize answered without a session id');
  await res.text();
  const initialized = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_POST_HEADERS, 'mcp-session-id': sessionId },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  assert.equal(initialized.status, 202);
  return sessionId;
}

// The token issuer lives with the examples (the demo uses it too).
export { createTestKey, startJwksServer, type JwksServer, type MintOptions, type TestKey, type TestKeyAlg } from '../../../examples/identity-provider/issuer.js';

/** Waits until /readyz on an admin listener answers 200 (with jwt auth: once its key sets were fetched). */
export async function waitUntilReady(adminUrl: string, timeoutMs = 10_000): Promise<void> {
  await waitFor(
    async () => {
      const res = await fetch(`${adminUrl}/readyz`);
      await res.text();
      return res.status === 200;
    },
    'the gateway to be ready',
    timeoutMs,
  );
}

/** The value of one series (name and labels, as written) in an admin listener's /metrics, or undefined. */
export async function metricSample(adminUrl: string, series: string): Promise<number | undefined> {
  const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

export function waitReady(gw: GatewayUnderTest): Promise<void> {
  return waitUntilReady(gw.adminUrl);
}
