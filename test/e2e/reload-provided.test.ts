/**
 * A task the gateway runs itself (providedTasks) holds its backend call past the request that
 * created it: a reload meanwhile must not close the agent under the call. The replaced policy
 * stays open until the call is over; the call's cancel notice still reaches the backend. Raw
 * HTTP rather than an SDK client, whose GET stream would hold the old policy open by itself.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ExampleServerStats } from '../../examples/mcp-server/server.js';
import { LEGACY_POST_HEADERS, initializeBody, testPolicy, metricSample } from './support/harness.js';
import { readMessages } from './support/reply-messages.js';
import { startTaskStack, type TaskStack } from './support/task-harness.js';
import { waitFor } from '../support/wait.js';

const PROVIDED = { tools: ['slow_report'] };

describe('a gateway-run task across a reload', () => {
  let stack: TaskStack;
  let headers: Record<string, string>;
  let id = 1;
  const post = async (body: unknown) => {
    const res = await fetch(stack.gw.url, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, messages: await readMessages(res) };
  };
  const stats = () => stack.backends[0]!.stats as ExampleServerStats;

  before(async () => {
    stack = await startTaskStack({ era: 'legacy', plain: true, providedTasks: PROVIDED });
    headers = { ...LEGACY_POST_HEADERS, authorization: await stack.bearer('alice') };
    const init = await fetch(stack.gw.url, { method: 'POST', headers, body: initializeBody() });
    await init.arrayBuffer();
    headers['mcp-session-id'] = init.headers.get('mcp-session-id')!;
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  });
  after(() => stack?.close());

  it('keeps the replaced policy\'s agent open while the call runs, and its cancel notice reaches the backend', async () => {
    const created = await post({
      jsonrpc: '2.0',
      id: id++,
      method: 'tools/call',
      params: { name: 'slow_report', arguments: { seconds: 30, steps: 30 }, task: { ttl: 60_000 } },
    });
    const taskId = (created.messages[0] as { result: { task: { taskId: string } } }).result.task.taskId;
    await waitFor(() => stats().requests.some((r) => r.rpcMethod === 'tools/call'), 'the backend call');

    const started = stack.gw.gateway.policy;
    const instances = stack.backends.map((b) => new URL(b.url).origin);
    const next = testPolicy(stack.backends.map((b) => b.url), {
      auth: { mode: 'jwt', issuers: [{ issuer: stack.jwks.issuer, jwksUri: stack.jwks.url }] },
      upstreams: { tools: { instances, cooldown: '30s', providedTasks: PROVIDED, timeouts: { headers: '20s' } } },
    });
    assert.equal((await stack.gw.gateway.reload(next)).outcome, 'applied');
    const agent = started.agents.get('tools')!;
    assert.notEqual(stack.gw.gateway.policy.agents.get('tools'), agent, 'new timeouts, new agent');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(agent.closed, false, 'the running call holds its policy open');
    assert.equal(await metricSample(stack.gw.adminUrl, 'taskgate_config_draining_policies'), 1);

    const cancelled = await post({ jsonrpc: '2.0', id: id++, method: 'tasks/cancel', params: { taskId } });
    assert.equal((cancelled.messages[0] as { result: { status: string } }).result.status, 'cancelled');
    await waitFor(() => stats().requests.some((r) => r.rpcMethod === 'notifications/cancelled'), 'the cancel notice on the call\'s agent');
    await waitFor(async () => (await metricSample(stack.gw.adminUrl, 'taskgate_config_draining_policies')) === 0, 'the replaced policy to close');
    assert.equal(agent.closed, true);
  });
});
