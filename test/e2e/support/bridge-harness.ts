/**
 * Stacks for bridging the task generations (src/bridge/): a real JWKS issuer, a backend of one
 * generation, the gateway with JWT auth in front of it, and clients of the other generation
 * acting as named principals. The gateway's probes of the backend have finished before a test
 * runs (what an operator sees in the generation gauge).
 */
import { startModernTaskServer, type ModernTaskServer } from '../../../examples/modern-task-server/server.js';
import type { GatewayDeps } from '../../../src/gateway.js';
import { startGateway, startJwksServer, testPolicy, type GatewayUnderTest, type JwksServer, type PolicyOverrides, waitUntilReady } from './harness.js';
import { AUDIENCE } from './task-harness.js';

export interface BridgeStack {
  jwks: JwksServer;
  gw: GatewayUnderTest;
  bearer(subject: string): Promise<string>;
  close(): Promise<void>;
}

export interface ModernBackendStack extends BridgeStack {
  backend: ModernTaskServer;
}

/** A dual-era 2.4.0 server whose only tasks are the 2026 extension's, behind the gateway. */
export async function startModernBackendStack(options: { tasks?: Record<string, unknown>; policy?: PolicyOverrides; upstream?: Record<string, unknown>; gatewayDeps?: GatewayDeps; workMs?: number } = {}): Promise<ModernBackendStack> {
  const backend = await startModernTaskServer({ name: 'modern-0', pollIntervalMs: 100, workMs: options.workMs ?? 100, legacy: 'stateless' });
  const stack = await startBridgeGateway([backend.url], options);
  return { ...stack, backend, close: async () => {
    await stack.close();
    await backend.close();
  } };
}

export async function startBridgeGateway(urls: string[], options: { tasks?: Record<string, unknown>; policy?: PolicyOverrides; upstream?: Record<string, unknown>; gatewayDeps?: GatewayDeps }): Promise<BridgeStack> {
  const jwks = await startJwksServer({ algs: ['ES256'] });
  const policy = testPolicy(urls, {
    auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
    tasks: options.tasks ?? {},
    upstreams: { tools: { instances: urls.map((u) => new URL(u).origin), cooldown: '30s', ...options.upstream } },
    ...options.policy,
  });
  const gw = await startGateway(policy, options.gatewayDeps);
  await waitUntilReady(gw.adminUrl);
  await gw.gateway.bridge.generations.settled();
  return {
    jwks,
    gw,
    bearer: async (subject) => `Bearer ${await jwks.mint({ sub: subject, aud: AUDIENCE })}`,
    async close() {
      await gw.close();
      await jwks.close();
    },
  };
}

/** The generation gauge's current value for the stack's one instance. */
export async function generationSeen(stack: BridgeStack, instanceUrl: string): Promise<string | undefined> {
  const metrics = await stack.gw.gateway.metrics.registry.getSingleMetric('taskgate_bridge_backend_generation')?.get();
  const instance = new URL(instanceUrl).origin;
  return metrics?.values.find((value) => value.labels.instance === instance && value.value === 1)?.labels.generation as string | undefined;
}
