/**
 * Authentication and the task policy changed by a reload, one key at a time: issuers added and
 * removed (an unchanged issuer's key set is kept, not fetched again), audiences, route scopes;
 * the live-task limit, the poll mode and a tool's retention, which apply to the next request.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LEGACY_POST_HEADERS, initializeBody, startJwksServer, type JwksServer } from './harness.js';
import { AUDIENCE, modernClient, startTaskStack, type TaskStack } from './task-harness.js';
import { metricSample, taskStackPolicy, watchReadiness } from './reload-harness.js';
import type { ModernTaskClient } from './modern-client.js';

/** The status of an initialize carrying this bearer token. */
async function statusWith(stack: TaskStack, token: string): Promise<number> {
  const res = await fetch(stack.gw.url, {
    method: 'POST',
    headers: { ...LEGACY_POST_HEADERS, authorization: `Bearer ${token}` },
    body: initializeBody(),
  });
  await res.arrayBuffer();
  return res.status;
}

describe('auth changed by a reload', () => {
  let stack: TaskStack;
  let second: JwksServer;
  let readiness: ReturnType<typeof watchReadiness>;
  const issuer = (jwks: JwksServer, extra: Record<string, unknown> = {}) => ({ issuer: jwks.issuer, jwksUri: jwks.url, ...extra });
  const withAuth = (issuers: unknown[], overrides: Record<string, unknown> = {}) =>
    taskStackPolicy(stack, { auth: { mode: 'jwt', issuers }, ...overrides });

  before(async () => {
    stack = await startTaskStack({ era: 'legacy' });
    second = await startJwksServer({ algs: ['ES256'] });
    readiness = watchReadiness(stack.gw.adminUrl);
  });
  after(async () => {
    const statuses = await readiness?.stop();
    await stack?.close();
    await second?.close();
    assert.ok(statuses?.every((s) => s === 200), `/readyz answered ${[...new Set(statuses)].join(', ')}`);
  });

  it('adds and removes issuers; an unchanged issuer keeps its fetched key set', async () => {
    const first = await stack.jwks.mint({ sub: 'alice', aud: AUDIENCE });
    const other = await second.mint({ sub: 'bob', aud: AUDIENCE });
    assert.equal(await statusWith(stack, other), 401);
    const fetchesBefore = stack.jwks.fetches;
    assert.equal((await stack.gw.gateway.reload(withAuth([issuer(stack.jwks), issuer(second)]))).outcome, 'applied');
    assert.equal(second.fetches, 1, 'the new issuer\'s keys were fetched before the swap');
    assert.equal(await statusWith(stack, other), 200);
    assert.equal(await statusWith(stack, first), 200);
    assert.equal(stack.jwks.fetches, fetchesBefore, 'the kept issuer\'s keys were not fetched again');
    assert.equal((await stack.gw.gateway.reload(withAuth([issuer(second)]))).outcome, 'applied');
    assert.equal(await statusWith(stack, first), 401);
    assert.equal(await statusWith(stack, other), 200);
    await stack.gw.gateway.reload(withAuth([issuer(stack.jwks)]));
  });

  it('changes the accepted audiences', async () => {
    const forGateway = await stack.jwks.mint({ sub: 'alice', aud: AUDIENCE });
    const forOther = await stack.jwks.mint({ sub: 'alice', aud: 'urn:taskgate:other' });
    assert.equal(await statusWith(stack, forOther), 401);
    await stack.gw.gateway.reload(withAuth([issuer(stack.jwks, { audiences: ['urn:taskgate:other'] })]));
    assert.equal(await statusWith(stack, forOther), 200);
    assert.equal(await statusWith(stack, forGateway), 401);
    await stack.gw.gateway.reload(withAuth([issuer(stack.jwks)]));
    assert.equal(await statusWith(stack, forGateway), 200);
  });

  it('changes a route\'s required scopes', async () => {
    const plain = await stack.jwks.mint({ sub: 'alice', aud: AUDIENCE });
    const scoped = await stack.jwks.mint({ sub: 'alice', aud: AUDIENCE, scope: 'tools:call' });
    const routes = [{ path: '/mcp', upstream: 'tools', upstreamPath: '/mcp', scopes: ['tools:call'] }];
    await stack.gw.gateway.reload(withAuth([issuer(stack.jwks)], { routes }));
    assert.equal(await statusWith(stack, plain), 403);
    assert.equal(await statusWith(stack, scoped), 200);
    await stack.gw.gateway.reload(withAuth([issuer(stack.jwks)]));
    assert.equal(await statusWith(stack, plain), 200);
  });
});

describe('task policy changed by a reload', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  const tasks = (maxLive: number, mode: 'cached' | 'reject', maxTtl: string) => ({
    maxLivePerPrincipal: maxLive,
    poll: { mode },
    tools: { slow_scan: { maxTtl } },
  });

  before(async () => {
    // The backend asks for polls 5 s apart: two polls in a row make the second early.
    stack = await startTaskStack({ era: 'modern', pollIntervalMs: 5000, tasks: tasks(1, 'cached', '20s') });
    alice = await modernClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  const create = () => alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 60 } });

  it('applies the new limit, poll mode and tool retention to the next request', async () => {
    const first = await create();
    assert.equal(first.response?.result?.ttlMs, 20_000, 'the tool\'s maxTtl caps the lifetime');
    const taskId = String(first.response?.result?.taskId);
    const refused = await create();
    assert.equal(refused.status, 429);
    assert.equal(refused.response?.error?.code, -31002, 'one live task at most');
    assert.equal((await alice.raw('tasks/get', { taskId })).status, 200);
    assert.equal((await alice.raw('tasks/get', { taskId })).status, 200, 'an early poll is answered from the cache');

    const result = await stack.gw.gateway.reload(taskStackPolicy(stack, { tasks: tasks(2, 'reject', '40s') }));
    assert.equal(result.outcome, 'applied');
    assert.deepEqual(result.changed, ['tasks.maxLivePerPrincipal', 'tasks.poll.mode', 'tasks.tools.slow_scan.maxTtl']);

    const early = await alice.raw('tasks/get', { taskId });
    assert.equal(early.status, 429, 'the same early poll is now refused');
    assert.equal(early.response?.error?.code, -31001);
    const second = await create();
    assert.equal(second.status, 200, 'a second live task is now allowed');
    assert.equal(second.response?.result?.ttlMs, 40_000, 'with the tool\'s new retention');
    assert.equal(await metricSample(stack.gw.adminUrl, 'taskgate_config_reloads_total{outcome="applied"}'), 1);
  });
});
