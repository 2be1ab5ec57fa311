/**
 * Bridged tasks on two gateway replicas sharing the machine's Redis (a key prefix of its own):
 * a 2025-11-25 client's task on a 2026-07-28-only backend, created through one replica, is
 * polled, answered (input included), listed and cancelled through the other; another principal
 * is refused there exactly like an unknown handle. And the reverse: a 2026 client's task on a
 * 2025-only backend, in the principal's session, polled, answered and cancelled across replicas.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { McpError} from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { createModernTaskClient, type ModernTaskClient } from './support/modern-client.js';
import { startGateway, startJwksServer, testPolicy, type GatewayUnderTest, type JwksServer, waitUntilReady } from './support/harness.js';
import type { BridgeStack } from './support/bridge-harness.js';
import { sharedRedisSpace, type SharedRedisSpace } from '../support/redis-servers.js';
import { AUDIENCE, legacyClient } from './support/task-harness.js';
import { createLegacyTask, waitForLegacyStatus, waitForModernStatus } from './support/task-waits.js';

const textOf = (result: CallToolResult): string => (result.content[0]?.type === 'text' ? result.content[0].text : '');

/**
 * Two gateways in front of `backendUrl` (bridge: auto, the generation probed before startGateway
 * returns) on one key space of the shared Redis, trusting one issuer: replicas of one deployment.
 * Each joins `gateways` as it starts, so the suite's after() closes it whatever happens next.
 */
async function startReplicas(gateways: GatewayUnderTest[], backendUrl: string, jwks: JwksServer, redis: SharedRedisSpace): Promise<void> {
  const policy = testPolicy([backendUrl], {
    auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
    store: redis.storePolicy(),
    upstreams: { tools: { instances: [new URL(backendUrl).origin], bridge: 'auto' } },
  });
  for (let i = 0; i < 2; i++) {
    const gw = await startGateway(policy);
    gateways.push(gw);
    await waitUntilReady(gw.adminUrl);
  }
}

describe('bridge: 2025 client, 2026 backend, two replicas on Redis', () => {
  let backend: ModernTaskServer;
  let jwks: JwksServer;
  const redis = sharedRedisSpace('tg-bridge');
  const gateways: GatewayUnderTest[] = [];
  const clients: Client[] = [];
  let stack: BridgeStack;
  const via = async (index: number, subject: string, name?: string): Promise<Client> => {
    const client = await legacyClient(stack, subject, { name }, gateways[index]!.url);
    clients.push(client);
    return client;
  };

  before(async () => {
    backend = await startModernTaskServer({ name: 'modern-r', pollIntervalMs: 100, workMs: 100, legacy: 'stateless' });
    jwks = await startJwksServer({ algs: ['ES256'] });
    await startReplicas(gateways, backend.url, jwks, redis);
    stack = { jwks, gw: gateways[0]!, bearer: async (subject) => `Bearer ${await jwks.mint({ sub: subject, aud: AUDIENCE })}`, close: async () => undefined };
  });
  after(async () => {
    await Promise.allSettled(clients.map((client) => client.close()));
    await Promise.allSettled(gateways.map((gw) => gw.close()));
    await backend?.close();
    await jwks?.close();
    await redis.removeKeys();
  });

  it('a task created through one replica is polled, listed and its result served through the other', async () => {
    const one = await via(0, 'alice');
    const two = await via(1, 'alice');
    const task = await createLegacyTask(one, 'slow_scan', { seconds: 0.5 });
    assert.equal((await two.experimental.tasks.getTask(task.taskId)).status, 'working');
    assert.ok((await two.experimental.tasks.listTasks()).tasks.some((t) => t.taskId === task.taskId));
    assert.equal((await waitForLegacyStatus(two, task.taskId, 'completed')).status, 'completed');
    const result = await two.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(textOf(result as CallToolResult), 'Scan finished after 0.5s');
  });

  it('a question asked through one replica\'s task is answered on the other\'s tasks/result stream', async () => {
    const one = await via(0, 'alice');
    const two = await via(1, 'alice', 'Grace');
    const task = await createLegacyTask(one, 'ask_name');
    await waitForLegacyStatus(two, task.taskId, 'input_required');
    const result = await two.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(textOf(result as CallToolResult), 'Hello, Grace');
  });

  it('a cancel through the other replica is seen by the backend; another principal is refused like unknown', async () => {
    const one = await via(0, 'alice');
    const two = await via(1, 'alice');
    const mallory = await via(1, 'mallory');
    const task = await createLegacyTask(one, 'slow_scan', { seconds: 30 });
    const refusal = async (promise: Promise<unknown>) => promise.then(() => assert.fail('expected an error'), (error: unknown) => error as McpError);
    const foreign = await refusal(mallory.experimental.tasks.getTask(task.taskId));
    const unknown = await refusal(mallory.experimental.tasks.getTask('B'.repeat(32)));
    assert.equal(foreign.code, -32602);
    assert.equal(foreign.message, unknown.message);
    assert.equal((await two.experimental.tasks.cancelTask(task.taskId)).status, 'cancelled');
    assert.ok(backend.stats.requests.some((r) => r.rpcMethod === 'tasks/cancel'));
    assert.equal((await one.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
  });
});

describe('bridge: 2026 client, 2025 backend, two replicas on Redis', () => {
  let backend: ExampleServer;
  let jwks: JwksServer;
  const redis = sharedRedisSpace('tg-bridge');
  const gateways: GatewayUnderTest[] = [];
  const clients: ModernTaskClient[] = [];
  const via = async (index: number, subject: string): Promise<ModernTaskClient> => {
    const token = await jwks.mint({ sub: subject, aud: AUDIENCE });
    const client = await createModernTaskClient(gateways[index]!.url, { headers: { authorization: `Bearer ${token}` } });
    clients.push(client);
    return client;
  };
  const startTask = async (client: ModernTaskClient, name: string, args: Record<string, unknown> = {}): Promise<string> => {
    const execution = await client.callTool(name, args);
    assert.equal(execution.kind, 'task');
    await execution.detach();
    return execution.handle!.taskId;
  };

  before(async () => {
    backend = await startExampleServer({ name: 'legacy-r' });
    jwks = await startJwksServer({ algs: ['ES256'] });
    await startReplicas(gateways, backend.url, jwks, redis);
  });
  after(async () => {
    await Promise.allSettled(clients.map((client) => client.close()));
    await Promise.allSettled(gateways.map((gw) => gw.close()));
    await backend?.close();
    await jwks?.close();
    await redis.removeKeys();
  });

  it('a task created through one replica is polled to its inline result through the other', async () => {
    const one = await via(0, 'alice');
    const two = await via(1, 'alice');
    const taskId = await startTask(one, 'slow_scan', { seconds: 0.4 });
    const done = await waitForModernStatus(two, taskId, 'completed');
    assert.match(String((done.raw.result as { content: { text: string }[] }).content[0]!.text), /^scan complete/);
  });

  it('a question read through one replica is answered through the other', async () => {
    const one = await via(0, 'alice');
    const two = await via(1, 'alice');
    const taskId = await startTask(one, 'ask_name');
    const parked = await waitForModernStatus(one, taskId, 'input_required');
    const [key] = Object.keys(parked.raw.inputRequests as Record<string, unknown>);
    const seen = await two.getTask(taskId);
    assert.deepEqual(Object.keys(seen.raw.inputRequests as Record<string, unknown>), [key], 'the other replica shows the same question');
    await two.updateTask(taskId, { [key!]: { action: 'accept', content: { name: 'Lin' } } });
    const done = await waitForModernStatus(one, taskId, 'completed');
    assert.equal((done.raw.result as { content: { text: string }[] }).content[0]!.text, 'Hello, Lin');
  });

  it('another principal is refused through the other replica like an unknown handle; a cancel there reaches the backend', async () => {
    const one = await via(0, 'alice');
    const two = await via(1, 'alice');
    const mallory = await via(1, 'mallory');
    const taskId = await startTask(one, 'slow_scan', { seconds: 30 });
    const foreign = await mallory.raw('tasks/get', { taskId });
    const unknown = await mallory.raw('tasks/get', { taskId: 'D'.repeat(32) });
    assert.deepEqual(foreign.response?.error, unknown.response?.error);
    await two.cancelTask(taskId);
    assert.ok(backend.stats.requests.some((r) => r.rpcMethod === 'tasks/cancel'));
    assert.equal((await waitForModernStatus(one, taskId, 'cancelled')).status, 'cancelled');
  });
});
