/**
 * Task-takeover test stacks: a real JWKS issuer, backends of either task generation, the
 * gateway with JWT auth in front of them, and clients acting as named principals.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startExampleServer, type ExampleServerStats } from '../../../examples/mcp-server/server.js';
import { startModernTaskServer, type ModernTaskServer } from '../../../examples/modern-task-server/server.js';
import { startGateway, startJwksServer, testPolicy, waitUntilReady, type GatewayUnderTest, type JwksServer, type PolicyOverrides } from './harness.js';
import { createModernTaskClient, type ModernTaskClient } from './modern-client.js';
import type { GatewayDeps } from '../../../src/gateway.js';

export const AUDIENCE = 'http://127.0.0.1/mcp';

export interface Backend {
  url: string;
  stats: ExampleServerStats | ModernTaskServer['stats'];
  close(): Promise<void>;
}

export interface TaskStack {
  jwks: JwksServer;
  backends: Backend[];
  /** The modern backends themselves (their task controls), when era is modern. */
  modern: ModernTaskServer[];
  gw: GatewayUnderTest;
  /** An Authorization header value for a principal. */
  bearer(subject: string): Promise<string>;
  /** Every request the backends received for a JSON-RPC method. */
  received(rpcMethod: string): number;
  close(): Promise<void>;
}

export async function startTaskStack(options: {
  era: 'legacy' | 'modern';
  count?: number;
  tasks?: Record<string, unknown>;
  policy?: PolicyOverrides;
  pollIntervalMs?: number;
  enableJsonResponse?: boolean;
  gatewayDeps?: GatewayDeps;
  /** Backends with no tasks of their own (the SDK servers as they come). */
  plain?: boolean;
  /** How long the modern backend's fixed-length tools work. */
  workMs?: number;
  /** upstreams.tools.providedTasks: the tools the gateway runs as tasks itself. */
  providedTasks?: Record<string, unknown>;
  /** upstreams.tools.backgroundCalls: the tools whose long calls become background calls. */
  backgroundCalls?: Record<string, unknown>;
  /** Modern backends: which ones (by index) push task status on subscriptions/listen. */
  pushTasks?: readonly boolean[];
}): Promise<TaskStack> {
  const jwks = await startJwksServer({ algs: ['ES256'] });
  const backends: Backend[] = [];
  const modern: ModernTaskServer[] = [];
  for (let i = 0; i < (options.count ?? 1); i++) {
    if (options.era === 'modern') {
      const server = await startModernTaskServer({
        name: `modern-${i}`,
        pollIntervalMs: options.pollIntervalMs ?? 200,
        tasks: !options.plain,
        workMs: options.workMs,
        pushTasks: options.pushTasks?.[i] ?? false,
      });
      modern.push(server);
      backends.push(server);
    } else {
      backends.push(await startExampleServer({ name: `legacy-${i}`, enableJsonResponse: options.enableJsonResponse, tasks: !options.plain }));
    }
  }
  const policy = testPolicy(
    backends.map((b) => b.url),
    {
      auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
      tasks: options.tasks ?? {},
      ...(options.providedTasks || options.backgroundCalls
        ? {
            upstreams: {
              tools: {
                instances: backends.map((b) => new URL(b.url).origin),
                cooldown: '30s',
                ...(options.providedTasks && { providedTasks: options.providedTasks }),
                ...(options.backgroundCalls && { backgroundCalls: options.backgroundCalls }),
              },
            },
          }
        : {}),
      ...options.policy,
    },
  );
  const gw = await startGateway(policy, options.gatewayDeps);
  await waitUntilReady(gw.adminUrl);
  return {
    jwks,
    backends,
    modern,
    gw,
    bearer: async (subject) => `Bearer ${await jwks.mint({ sub: subject, aud: AUDIENCE })}`,
    received: (rpcMethod) => backends.reduce((n, b) => n + b.stats.requests.filter((r) => r.rpcMethod === rpcMethod).length, 0),
    async close() {
      await gw.close();
      await Promise.all(backends.map((b) => b.close()));
      await jwks.close();
    },
  };
}

/** What a client acting as a principal needs of a stack (this file's, or bridge-harness.ts'). */
export type PrincipalStack = Pick<TaskStack, 'gw' | 'bearer'>;

/**
 * An SDK 1.x client (2025-11-25) acting as `subject` through the gateway (at `url`, by default
 * the stack's route); answers elicitations with `name`. `seen` collects every body the client
 * was sent (streams as they end), for what must never reach it.
 */
export async function legacyClient(stack: PrincipalStack, subject: string, answers: { name?: string } = {}, url = stack.gw.url, seen?: string[]): Promise<Client> {
  const client = new Client({ name: `client-${subject}`, version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () =>
    answers.name ? { action: 'accept', content: { name: answers.name } } : { action: 'decline' },
  );
  const recording: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    void response.clone().text().then((text) => seen!.push(text), () => undefined);
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: await stack.bearer(subject) } },
    ...(seen === undefined ? {} : { fetch: recording }),
  });
  await client.connect(transport);
  return client;
}

export async function modernClient(stack: PrincipalStack, subject: string): Promise<ModernTaskClient> {
  return createModernTaskClient(stack.gw.url, { headers: { authorization: await stack.bearer(subject) } });
}

