/**
 * Gateway replicas as processes (gateway-process.ts) for the tests that run several on one
 * Redis: their policy files, starting them ready, clients acting as a principal on either era,
 * and closing it all.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SNAPSHOT_KEY_1 } from '../../support/redis-servers.js';
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

/**
 * A replica policy's `store:` on the Redis at `port` (one the test started) under `keyPrefix`,
 * sealed with the snapshot key the replicas find in their environment (Replicas' default env).
 */
export function replicaStore(port: number, keyPrefix: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'redis', url: `redis://127.0.0.1:${port}`, keyPrefix, ...extra, snapshotKeys: [{ id: 'k1', key: '${TG_SNAPSHOT_KEY}' }] };
}

export class Replicas {
  readonly running: GatewayProcess[] = [];
  private readonly clients: ModernTaskClient[] = [];
  private dir: Promise<string> | undefined;

  /** `env`: what the policy files' `${NAME}`s need (by default the snapshot key replicaStore names). */
  constructor(
    private readonly jwks: () => JwksServer,
    private readonly env: NodeJS.ProcessEnv = { TG_SNAPSHOT_KEY: SNAPSHOT_KEY_1.key },
  ) {}

  /** Writes replicaPolicy(jwks, parts) as `name` in a directory of its own (removed on close); the file's path. */
  async writePolicy(name: string, parts: Record<string, unknown>): Promise<string> {
    this.dir ??= mkdtemp(join(tmpdir(), 'taskgate-replicas-'));
    const file = join(await this.dir, name);
    await writeFile(file, replicaPolicy(this.jwks(), parts));
    return file;
  }

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
    if (this.dir) await rm(await this.dir, { recursive: true, force: true });
  }
}
