/**
 * Gateway replicas as processes (gateway-process.ts) for the tests that run several on one
 * Redis: starting them ready, clients acting as a principal on either era, and closing it all.
 */
import { LEGACY_POST_HEADERS, type JwksServer, waitUntilReady } from './harness.js';
import { createModernTaskClient, type ModernTaskClient } from './modern-client.js';
import { startGatewayProcess, type GatewayProcess } from './gateway-process.js';

/**
 * A replica policy (as JSON, which YAML reads): loopback listeners on free ports, JWT auth by
 * `jwks`, no audit on stdout, info logs (the process harness waits for "taskgate listening");
 * `parts` adds the upstreams, routes, store and the rest.
 */
export function replicaPolicy(jwks: JwksServer, parts: Record<string, unknown>): string {
  return JSON.stringify({
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    publicUrl: 'http://127.0.0.1',
    auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
    audit: { stdout: false },
    logging: { level: 'info' },
    ...parts,
  });
}

export class Replicas {
  readonly running: GatewayProcess[] = [];
  private readonly clients: ModernTaskClient[] = [];

  /** `env`: what the policy files' `${NAME}`s need (the snapshot key). */
  constructor(
    private readonly jwks: () => JwksServer,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Starts a replica on `policyFile` and waits until it is ready. */
  async start(policyFile: string): Promise<GatewayProcess> {
    const gateway = await startGatewayProcess(policyFile, this.env);
    this.running.push(gateway);
    await waitUntilReady(gateway.adminUrl);
    return gateway;
  }

  /** A 2026 task client on `path` of `gateway`, as `subject`. */
  async client(gateway: GatewayProcess, path = '/mcp', subject = 'alice'): Promise<ModernTaskClient> {
    const token = await this.jwks().mint({ sub: subject, aud: `http://127.0.0.1${path}` });
    const client = await createModernTaskClient(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
    this.clients.push(client);
    return client;
  }

  /** A 2025 session through `gateway` on `path`: the headers its later POSTs carry. */
  async openLegacySession(gateway: GatewayProcess, path = '/legacy', subject = 'alice'): Promise<Record<string, string>> {
    const token = await this.jwks().mint({ sub: subject, aud: `http://127.0.0.1${path}` });
    const headers = { ...LEGACY_POST_HEADERS, authorization: `Bearer ${token}` };
    const init = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }),
    });
    await init.text();
    const withSession = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')! };
    await (await fetch(`${gateway.url}${path}`, { method: 'POST', headers: withSession, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' })).text();
    return withSession;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.clients.map((c) => c.close()));
    await Promise.allSettled(this.running.map((g) => g.stop('SIGKILL')));
  }
}
