/**
 * Authentication and the task policy changed by a reload, one key at a time: issuers added and
 * removed (an unchanged issuer's key set is kept, not fetched again), audiences, route scopes;
 * the live-task limit, the poll mode and a tool's retention, which apply to the next request;
 * the claim mapping, which changes who a token names and never hands one principal's tasks to
 * another.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LEGACY_POST_HEADERS, initializeBody, startJwksServer, type JwksServer, metricSample } from './support/harness.js';
import { AUDIENCE, modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { taskStackPolicy, watchReadiness } from './support/reload-harness.js';
import { createModernTaskClient, type ModernTaskClient } from './support/modern-client.js';

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

describe('claim mapping changed by a reload', () => {
  let stack: TaskStack;
  const clients: ModernTaskClient[] = [];
  /** A client whose token carries exactly these claims (and the gateway's audience). */
  const clientWith = async (claims: Record<string, unknown>) => {
    const token = await stack.jwks.mint({ aud: AUDIENCE, ...claims });
    const client = await createModernTaskClient(stack.gw.url, { headers: { authorization: `Bearer ${token}` } });
    clients.push(client);
    return client;
  };
  const withSubjectClaim = (subject: string) =>
    taskStackPolicy(stack, { auth: { mode: 'jwt', issuers: [{ issuer: stack.jwks.issuer, jwksUri: stack.jwks.url, claims: { subject } }] } });

  before(async () => {
    stack = await startTaskStack({ era: 'modern' });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stack?.close();
  });

  it('does not hand a task to the user whose new subject claim equals the owner\'s old one', async () => {
    // Alice's sub is "x"; Bob's email is "x": under subject: email, Bob's subject reads "x" too.
    const alice = await clientWith({ sub: 'x', email: 'alice@example.com' });
    const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 60 } });
    const taskId = String(created.response?.result?.taskId);
    assert.equal((await alice.raw('tasks/get', { taskId })).status, 200);

    const result = await stack.gw.gateway.reload(withSubjectClaim('email'));
    assert.equal(result.outcome, 'applied');
    assert.deepEqual(result.changed, ['auth.issuers[0].claims.subject']);
    const bob = await clientWith({ sub: 'bob-sub', email: 'x' });
    const cancelsBefore = stack.received('tasks/cancel');
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const answer = await bob.raw(method, { taskId });
      assert.equal(answer.response?.error?.code, -32602, `${method}: ${JSON.stringify(answer.response)}`);
      assert.equal(answer.response?.error?.message, 'Failed to retrieve task: Task not found');
    }
    assert.equal(stack.received('tasks/cancel'), cancelsBefore, 'nothing reached the backend');
    const listened = await bob.raw('subscriptions/listen', { notifications: { taskIds: [taskId] } });
    const ack = listened.messages.find((m) => m.method === 'notifications/subscriptions/acknowledged') as { params?: { notifications?: unknown } } | undefined;
    assert.deepEqual(ack?.params?.notifications, { taskIds: [] }, 'the handle is not granted to a listen either');

    // Back to subject: sub, the task is Alice's again, and still running.
    await stack.gw.gateway.reload(withSubjectClaim('sub'));
    const polled = await alice.raw('tasks/get', { taskId });
    assert.equal(polled.response?.result?.status, 'working', JSON.stringify(polled.response));
    await alice.raw('tasks/cancel', { taskId });
  });
});
