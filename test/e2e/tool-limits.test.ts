/**
 * Per-principal limits end to end: tools/call rates and calls in flight (globally and per
 * tool) answered 429 before the backend sees anything, audited and counted; two replicas on
 * one Redis enforcing one shared number; and the enumeration detector suspending a prober's
 * tasks/* while another principal's polls go on.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { startModernTaskServer, type ModernTaskServer } from '../../examples/modern-task-server/server.js';
import { startGateway, startJwksServer, testPolicy, type GatewayUnderTest, type JwksServer, waitUntilReady } from './support/harness.js';
import { createModernTaskClient, type ModernTaskClient } from './support/modern-client.js';
import { AUDIENCE, modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { answersPing, reportMissingRedis, SHARED_REDIS, sharedRedisSpace, START_SHARED_REDIS } from '../support/redis-servers.js';
import { waitFor } from '../support/wait.js';

// Fixed windows are aligned to the epoch: a day-long one is not crossed during a test.
const DAY_RATE = (limit: number) => ({ limit, window: '1d' });

function captureLines(): { stream: Writable; events: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { stream, events: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const echo = (client: ModernTaskClient, text = 'hi') => client.raw('tools/call', { name: 'quick_echo', arguments: { text } }, { envelope: 'plain' });
const scan = (client: ModernTaskClient, seconds: number) => client.raw('tools/call', { name: 'slow_scan', arguments: { seconds } }, { envelope: 'plain' });

describe('per-principal tools/call limits', () => {
  let stack: TaskStack;
  const audit = captureLines();
  const clients: ModernTaskClient[] = [];
  const client = async (subject: string) => {
    const c = await modernClient(stack, subject);
    clients.push(c);
    return c;
  };
  before(async () => {
    stack = await startTaskStack({
      era: 'modern',
      policy: { toolLimits: { rate: DAY_RATE(3), tools: { slow_scan: { concurrency: 1 } } } },
      gatewayDeps: { auditDestination: audit.stream },
    });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stack.close();
  });

  it('answers a call past the rate 429 with Retry-After and -31003, and the backend never sees it', async () => {
    const alice = await client('alice');
    const bob = await client('bob');
    for (let i = 0; i < 3; i++) assert.equal((await echo(alice)).status, 200, `call ${i + 1}`);
    const refused = await echo(alice);
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 86_400, `Retry-After ${retryAfter}`);
    assert.equal(refused.response?.error?.code, -31003);
    assert.equal(refused.response?.id, refused.request.body.id, 'the error carries the request id');
    assert.match(refused.response?.error?.message ?? '', /rate limit reached/);
    assert.deepEqual(refused.response?.error?.data, { limit: 'rate', scope: 'global', max: 3, windowMs: 86_400_000 });
    assert.equal(stack.received('tools/call'), 3, 'the refused call did not reach the backend');
    assert.equal((await echo(bob)).status, 200, 'another principal has its own count');

    const limited = audit.events().filter((e) => e.event === 'limited');
    assert.equal(limited.length, 1);
    assert.equal(limited[0]!.reason, 'rate:global');
    assert.equal((limited[0]!.principal as { subject: string }).subject, 'alice');
    const metrics = await (await fetch(`${stack.gw.adminUrl}/metrics`)).text();
    assert.equal(sample(metrics, 'taskgate_limit_rejections_total{limit="rate",scope="global"}'), 1);
  });

  it('holds a tool to its calls in flight, and frees the slot when the answer ends', async () => {
    const carol = await client('carol');
    const before = stack.received('tools/call');
    const first = scan(carol, 1.5);
    // In flight once the backend has it: then a second call of the same tool is refused.
    await waitFor(() => stack.received('tools/call') > before, 'the backend to have the first call', 2000, 10);
    const second = await scan(carol, 0);
    assert.equal(second.status, 429);
    assert.equal(second.headers.get('retry-after'), '1');
    assert.deepEqual(second.response?.error?.data, { limit: 'concurrency', scope: 'tool', max: 1 });
    assert.equal((await echo(carol)).status, 200, 'other tools are not held by this tool\'s cap');
    assert.equal((await first).status, 200);
    // The slot is given back when the answer has gone; the release is one store call after it.
    let third = await scan(carol, 0);
    for (let i = 0; i < 50 && third.status === 429 && third.response?.error?.data && (third.response.error.data as { limit: string }).limit === 'concurrency'; i++) {
      await sleep(20);
      third = await scan(carol, 0);
    }
    assert.equal(third.status, 200, 'the slot is free again');
    const fourth = await echo(carol);
    assert.equal(fourth.status, 429, 'the fourth counted call of the day is past the global rate of 3');
    assert.equal((fourth.response?.error?.data as { limit: string }).limit, 'rate');
    assert.equal(stack.received('tools/call') - before, 3, 'two scans and the echo; neither refusal');
  });
});

const redisUp = await answersPing(SHARED_REDIS.port, SHARED_REDIS.host);
if (!redisUp) reportMissingRedis(`Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port}`, START_SHARED_REDIS);

describe('limits shared by two replicas on one Redis', { skip: !redisUp }, () => {
  let jwks: JwksServer;
  let backend: ModernTaskServer;
  const replicas: GatewayUnderTest[] = [];
  const audits = [captureLines(), captureLines()];
  const clients: ModernTaskClient[] = [];
  const space = sharedRedisSpace('taskgate-test-limits-e2e');

  const clientOf = async (replica: GatewayUnderTest, subject: string) => {
    const token = await jwks.mint({ sub: subject, aud: AUDIENCE });
    const c = await createModernTaskClient(replica.url, { headers: { authorization: `Bearer ${token}` } });
    clients.push(c);
    return c;
  };

  before(async () => {
    jwks = await startJwksServer({ algs: ['ES256'] });
    backend = await startModernTaskServer({ pollIntervalMs: 100 });
    const policy = testPolicy([backend.url], {
      auth: { mode: 'jwt', issuers: [{ issuer: jwks.issuer, jwksUri: jwks.url }] },
      store: space.storePolicy(),
      toolLimits: { rate: DAY_RATE(4) },
      audit: { enumeration: { threshold: 5, window: '1m', action: 'suspend' } },
      tasks: { poll: { tolerance: '100ms' } },
    });
    for (const audit of audits) {
      const replica = await startGateway(policy, { auditDestination: audit.stream });
      replicas.push(replica);
      await waitUntilReady(replica.adminUrl);
    }
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(replicas.map((r) => r.close()));
    await Promise.all([backend?.close(), jwks?.close()]);
    await space.removeKeys();
  });

  it('allows N calls in total across the replicas, not N per replica', async () => {
    const [onA, onB] = [await clientOf(replicas[0]!, 'alice'), await clientOf(replicas[1]!, 'alice')];
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await echo(i % 2 === 0 ? onA : onB)).status);
    assert.equal(statuses.filter((s) => s === 200).length, 4, `statuses: ${statuses.join(' ')}`);
    assert.equal(statuses.filter((s) => s === 429).length, 4);
    assert.equal(backend.stats.requests.filter((r) => r.rpcMethod === 'tools/call').length, 4);
  });

  it('suspends a probing principal on every replica while another principal keeps polling', async () => {
    const owner = await clientOf(replicas[0]!, 'olivia');
    const ownerOnB = await clientOf(replicas[1]!, 'olivia');
    const proberA = await clientOf(replicas[0]!, 'mallory');
    const proberB = await clientOf(replicas[1]!, 'mallory');
    const created = await owner.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
    const handle = String(created.response?.result?.taskId);

    // Random handles: each answered not-found until the fifth refusal suspends the prober.
    let notFound = 0;
    let suspended: Awaited<ReturnType<ModernTaskClient['raw']>> | undefined;
    for (let i = 0; i < 40 && !suspended; i++) {
      const probe = await (i % 2 === 0 ? proberA : proberB).raw('tasks/get', { taskId: randomBytes(24).toString('base64url') });
      if (probe.status === 429) suspended = probe;
      else {
        assert.equal(probe.response?.error?.code, -32602);
        notFound += 1;
        // Counted after the answer has gone: give the count a moment to land before the next probe.
        await sleep(5);
      }
    }
    assert.ok(suspended, 'the prober was suspended');
    assert.ok(notFound >= 5 && notFound <= 8, `${notFound} probes were answered before the suspension`);
    assert.equal(suspended.response?.error?.code, -31003);
    const retryAfter = Number(suspended.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    // On both replicas, even for the prober's guess of a real handle.
    assert.equal((await proberA.raw('tasks/get', { taskId: handle })).status, 429);
    assert.equal((await proberB.raw('tasks/get', { taskId: handle })).status, 429);

    // The owner's polls on either replica are untouched.
    await sleep(150);
    const polled = await owner.raw('tasks/get', { taskId: handle });
    assert.equal(polled.status, 200);
    assert.equal(polled.response?.result?.status, 'working');
    await sleep(150);
    assert.equal((await ownerOnB.raw('tasks/get', { taskId: handle })).status, 200);

    const suspensions = audits.flatMap((a) => a.events()).filter((e) => e.event === 'suspended');
    assert.equal(suspensions.length, 1, 'audited once, by the replica whose refusal reached the threshold');
    assert.equal((suspensions[0]!.principal as { subject: string }).subject, 'mallory');
    await owner.raw('tasks/cancel', { taskId: handle });
  });
});
