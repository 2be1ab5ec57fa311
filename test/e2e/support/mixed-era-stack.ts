/**
 * One gateway, one principal, both task generations: a 2025 backend (SDK 1.x example server)
 * at /mcp and a 2026 backend (the modern task server) at /modern, each behind a delaying
 * proxy whose tasks/get delay a test can set, JWT auth, on the memory store or on the shared
 * Redis under a key prefix of its own (removed again on close).
 */
import { startExampleServer, type ExampleServer } from '../../../examples/mcp-server/server.js';
import { startModernTaskServer, type ModernTaskServer } from '../../../examples/modern-task-server/server.js';
import { startBackendProxy, type BackendProxy } from './backend-proxy.js';
import { startGateway, testPolicy, type GatewayUnderTest, startJwksServer, type JwksServer, waitUntilReady } from './harness.js';
import { sharedRedisSpace } from '../../support/redis-servers.js';

export type StoreKind = 'memory' | 'redis';

export interface MixedEraStack {
  gw: GatewayUnderTest;
  legacy: ExampleServer;
  modern: ModernTaskServer;
  /** The gateway's 2025 route and 2026 route. */
  legacyUrl: string;
  modernUrl: string;
  /** How long the proxies hold each tasks/get before passing it to the backend (ms). */
  delay: { tasksGet: number };
  /** An Authorization header value for `subject` on the route at `path`. */
  bearer(subject: string, path: '/mcp' | '/modern'): Promise<string>;
  close(): Promise<void>;
}

export async function startMixedEraStack(options: { store: StoreKind; tasks?: Record<string, unknown> }): Promise<MixedEraStack> {
  const jwks: JwksServer = await startJwksServer({ algs: ['ES256'] });
  const legacy = await startExampleServer({ name: 'legacy' });
  const modern = await startModernTaskServer({ name: 'modern', pollIntervalMs: 200 });
  const delay = { tasksGet: 0 };
  const hold = (rpcMethod: string | undefined) => (rpcMethod === 'tasks/get' ? delay.tasksGet : 0);
  const proxies: BackendProxy[] = [await startBackendProxy(legacy.url, { delayFor: hold }), await startBackendProxy(modern.url, { delayFor: hold })];
  const space = sharedRedisSpace();
  const store = options.store === 'redis' ? space.storePolicy() : { type: 'memory' };
  const policy = testPolicy([proxies[0]!.url], {
    auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
    upstreams: {
      legacy: { instances: [new URL(proxies[0]!.url).origin] },
      modern: { instances: [new URL(proxies[1]!.url).origin] },
    },
    routes: [
      { path: '/mcp', upstream: 'legacy', upstreamPath: '/mcp' },
      { path: '/modern', upstream: 'modern', upstreamPath: '/mcp' },
    ],
    tasks: options.tasks ?? {},
    store,
  });
  const gw = await startGateway(policy);
  await waitUntilReady(gw.adminUrl);
  const base = gw.url.replace(/\/mcp$/, '');
  return {
    gw,
    legacy,
    modern,
    legacyUrl: `${base}/mcp`,
    modernUrl: `${base}/modern`,
    delay,
    bearer: async (subject, path) => `Bearer ${await jwks.mint({ sub: subject, aud: `http://127.0.0.1${path}` })}`,
    async close() {
      await gw.close();
      await Promise.all(proxies.map((p) => p.close()));
      await Promise.all([legacy.close(), modern.close()]);
      await jwks.close();
      if (options.store === 'redis') await space.removeKeys();
    },
  };
}
