/**
 * Stacks for the operator console's tests: a real JWKS issuer (client tokens and operator
 * JWTs), the SDK's 2026-07-28 task server (and, when asked, a second upstream where the
 * gateway runs the tasks itself), and one or more gateways with the console on, all in
 * process, on 127.0.0.1 port 0. On Redis, every gateway shares one key prefix and one handle
 * hash salt: replicas of one deployment.
 */
import { startModernTaskServer, type ModernTaskServer } from '../../../examples/modern-task-server/server.js';
import { sharedRedisSpace } from '../../support/redis-servers.js';
import { startGateway, startJwksServer, testPolicy, type GatewayUnderTest, type JwksServer, type PolicyOverrides, waitUntilReady } from './harness.js';
import { createModernTaskClient, type ModernTaskClient } from './modern-client.js';

export const OPERATOR_TOKEN = 'operator-token-'.padEnd(44, 'o');
export const VIEWER_TOKEN = 'viewer-token-'.padEnd(44, 'v');
export const CONSOLE_AUDIENCE = 'taskgate-console';
const CLIENT_AUDIENCE = 'http://127.0.0.1/mcp';

export interface ConsoleStack {
  readonly jwks: JwksServer;
  /** The backend with task tools (upstream `tools`, route /mcp). */
  readonly backend: ModernTaskServer;
  /** A backend without tasks whose slow_scan the gateway runs as a task (upstream `plain`, route /plain). */
  readonly plain?: ModernTaskServer;
  readonly gateways: GatewayUnderTest[];
  /** Audit lines written by every gateway, parsed. */
  readonly audit: Record<string, unknown>[];
  /** A 2026 client through `gateway` (index) as `subject`, on /mcp or /plain. */
  client(subject: string, options?: { gateway?: number; path?: '/mcp' | '/plain' }): Promise<ModernTaskClient>;
  /** An operator JWT from the stack's issuer for the console's audience. */
  operatorJwt(scope: string | undefined, subject?: string): Promise<string>;
  /** A client token, for the MCP route: not for the console. */
  clientJwt(subject: string): Promise<string>;
  /** GET/POST on the console API of `gateway`, with `token` as the bearer (none: no header). */
  // The answers are JSON of many shapes that the tests read field by field with assertions.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  api(path: string, options?: { token?: string | null; method?: string; body?: unknown; gateway?: number }): Promise<{ status: number; headers: Headers; text: string; json: any }>;
  close(): Promise<void>;
}

export async function startConsoleStack(options: { store?: 'memory' | 'redis'; gateways?: number; plain?: boolean; policy?: PolicyOverrides } = {}): Promise<ConsoleStack> {
  const jwks = await startJwksServer({ algs: ['ES256'] });
  const backend = await startModernTaskServer({ name: 'tasks', pollIntervalMs: 200 });
  const plain = options.plain ? await startModernTaskServer({ name: 'plain', tasks: false }) : undefined;
  const space = sharedRedisSpace('taskgate-test-console');
  const store = options.store === 'redis' ? space.storePolicy() : { type: 'memory' };
  const audit: Record<string, unknown>[] = [];
  const upstreams: Record<string, unknown> = { tools: { instances: [new URL(backend.url).origin], cooldown: '30s' } };
  const routes: Record<string, unknown>[] = [{ path: '/mcp', upstream: 'tools', upstreamPath: '/mcp' }];
  if (plain) {
    upstreams.plain = { instances: [new URL(plain.url).origin], cooldown: '30s', providedTasks: { tools: ['slow_scan'], promoteAfter: '50ms' } };
    routes.push({ path: '/plain', upstream: 'plain', upstreamPath: '/mcp' });
  }
  const config = testPolicy([backend.url], {
    auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url, audiences: [CLIENT_AUDIENCE, 'http://127.0.0.1/plain'] }] },
    upstreams,
    routes,
    store,
    // Replicas of one deployment hash handles alike, so their consoles name tasks alike.
    audit: { stdout: false, handleHashSalt: 'console-test-salt-0123456789' },
    console: {
      enabled: true,
      principals: 'shown',
      tokens: [
        { name: 'oncall', role: 'operator', token: OPERATOR_TOKEN },
        { name: 'dashboards', role: 'viewer', token: VIEWER_TOKEN },
      ],
      jwt: { issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url, audiences: [CONSOLE_AUDIENCE] }] },
    },
    ...options.policy,
  });
  const gateways: GatewayUnderTest[] = [];
  const clients: ModernTaskClient[] = [];
  const auditDestination = { write: (line: string) => void audit.push(JSON.parse(line) as Record<string, unknown>) };
  for (let i = 0; i < (options.gateways ?? 1); i++) {
    const gw = await startGateway(config, { auditDestination });
    gateways.push(gw);
    await waitUntilReady(gw.adminUrl);
  }
  return {
    jwks,
    backend,
    plain,
    gateways,
    audit,
    async client(subject, clientOptions = {}) {
      const path = clientOptions.path ?? '/mcp';
      const token = await jwks.mint({ sub: subject, aud: `http://127.0.0.1${path}` });
      const base = gateways[clientOptions.gateway ?? 0]!.url.replace(/\/mcp$/, '');
      const client = await createModernTaskClient(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
      clients.push(client);
      return client;
    },
    operatorJwt: (scope, subject = 'ops-person') => jwks.mint({ sub: subject, aud: CONSOLE_AUDIENCE, ...(scope === undefined ? {} : { scope }) }),
    clientJwt: (subject) => jwks.mint({ sub: subject, aud: CLIENT_AUDIENCE }),
    async api(path, apiOptions = {}) {
      const token = apiOptions.token === undefined ? OPERATOR_TOKEN : apiOptions.token;
      const headers: Record<string, string> = {};
      if (token !== null) headers.authorization = `Bearer ${token}`;
      if (apiOptions.body !== undefined) headers['content-type'] = 'application/json';
      const url = path.startsWith('/console') ? path : `/console/api/v1${path}`;
      const res = await fetch(`${gateways[apiOptions.gateway ?? 0]!.adminUrl}${url}`, {
        method: apiOptions.method ?? (apiOptions.body === undefined ? 'GET' : 'POST'),
        headers,
        body: apiOptions.body === undefined ? undefined : JSON.stringify(apiOptions.body),
      });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, text, json };
    },
    async close() {
      await Promise.allSettled(clients.map((c) => c.close()));
      for (const gw of gateways) await gw.close();
      await backend.close();
      await plain?.close();
      await jwks.close();
      if (options.store === 'redis') await space.removeKeys();
    },
  };
}

/** A 2026 task of `tool` created through `client`; its handle (the client's taskId). */
export async function createTask(client: ModernTaskClient, tool: string, args: Record<string, unknown>): Promise<string> {
  const created = await client.raw('tools/call', { name: tool, arguments: args });
  const result = created.response?.result as { taskId?: string; resultType?: string } | undefined;
  if (result?.resultType !== 'task' || typeof result.taskId !== 'string') throw new Error(`no task created: ${JSON.stringify(created.response)}`);
  return result.taskId;
}
