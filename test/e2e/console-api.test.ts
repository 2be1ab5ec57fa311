/**
 * The operator console's admin API (docs/console.md) against real peers: the SDK's 2026 task
 * server, a plain server whose tool the gateway runs as a task, a real JWKS issuer for client
 * and operator tokens. Who may read and act; what a listing shows and never shows; cancel and
 * suspend through the paths a task's owner and the limits stage use.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isHandleShaped } from '../../src/tasks/handle.js';
import { createTask, startConsoleStack, VIEWER_TOKEN, OPERATOR_TOKEN, type ConsoleStack } from './support/console-harness.js';
import { waitFor, waitForValue } from '../support/wait.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { listen, taskIn } from './support/push-listener.js';
import { waitForModernStatus } from './support/task-waits.js';

describe('operator console API', () => {
  let stack: ConsoleStack;
  let alice: ModernTaskClient;
  let bob: ModernTaskClient;
  let aliceTask: string;
  let bobTask: string;

  before(async () => {
    stack = await startConsoleStack({ plain: true });
    alice = await stack.client('alice');
    bob = await stack.client('bob');
    aliceTask = await createTask(alice, 'slow_scan', { seconds: 60 });
    bobTask = await createTask(bob, 'report_status', { message: 'bob is halfway', seconds: 60 });
  });
  after(() => stack?.close());

  describe('who may use it', () => {
    it('answers 401 with a Bearer challenge without credentials, on the API and the page, and the page is the sign-in form', async () => {
      const api = await stack.api('/tasks', { token: null });
      assert.equal(api.status, 401);
      assert.equal(api.json.error.code, 'TG_ERR_UNAUTHORIZED');
      assert.match(api.headers.get('www-authenticate') ?? '', /^Bearer realm="taskgate-console"/);
      const page = await stack.api('/console', { token: null });
      assert.equal(page.status, 401);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);
      assert.match(page.text, /id="sign-in-form"/);
      assert.ok(!page.text.includes(aliceTask) && !page.text.includes('alice'), 'the page holds no data');
    });

    it('answers 401 to an unknown token and to a client token for the MCP route', async () => {
      assert.equal((await stack.api('/tasks', { token: 'x'.repeat(44) })).status, 401);
      const client = await stack.api('/tasks', { token: await stack.clientJwt('alice') });
      assert.equal(client.status, 401, 'a token for another audience is no operator token');
      assert.equal((await stack.api('/tasks', { token: await stack.operatorJwt(undefined).then((t) => `${t}x`) })).status, 401, 'a bad signature');
    });

    it('answers 403 to an operator-audience JWT without a console scope, and 200 with one', async () => {
      const none = await stack.api('/me', { token: await stack.operatorJwt('openid profile') });
      assert.equal(none.status, 403);
      assert.equal(none.json.error.code, 'TG_ERR_CONSOLE_FORBIDDEN');
      const page = await stack.api('/console', { token: await stack.operatorJwt('openid') });
      assert.equal(page.status, 403);
      const viewer = await stack.api('/me', { token: await stack.operatorJwt('taskgate.console.view', 'vera') });
      assert.deepEqual(viewer.json, { name: 'vera', role: 'viewer', via: 'jwt', principals: 'shown' });
      const operator = await stack.api('/me', { token: await stack.operatorJwt('openid taskgate.console.operate', 'otto') });
      assert.equal(operator.json.role, 'operator');
      assert.equal((await stack.api('/console', { token: OPERATOR_TOKEN })).status, 200);
    });

    it('lets a viewer read but not act: 403 on cancel and suspend, and nothing changes', async () => {
      const listing = await stack.api('/tasks', { token: VIEWER_TOKEN });
      assert.equal(listing.status, 200);
      const id = listing.json.tasks[0].id as string;
      const cancel = await stack.api(`/tasks/${id}/cancel`, { token: VIEWER_TOKEN, body: { reason: 'trying' } });
      assert.equal(cancel.status, 403);
      assert.equal(cancel.json.error.code, 'TG_ERR_CONSOLE_FORBIDDEN');
      const key = listing.json.tasks[0].principal.key as string;
      assert.equal((await stack.api(`/principals/${key}/suspend`, { token: VIEWER_TOKEN, body: { reason: 'trying', duration: '1m' } })).status, 403);
      assert.equal((await stack.api(`/principals/${key}`)).json.suspendedForMs, 0);
      assert.ok(!stack.audit.some((e) => String(e.event).startsWith('operator_')), 'no action was audited');
    });

    it('sends the strict security headers on the page, the assets and the API', async () => {
      for (const path of ['/console', '/console/assets/console.js', '/console/api/v1/me']) {
        const res = await stack.api(path);
        const csp = res.headers.get('content-security-policy') ?? '';
        assert.match(csp, /default-src 'self'/, path);
        assert.match(csp, /script-src 'self'(;|$)/, path);
        assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, path);
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path);
        assert.equal(res.headers.get('set-cookie'), null, path);
      }
      assert.equal((await stack.api('/console/assets/console.js', { token: null })).status, 200, 'the page\'s code holds no data');
      assert.equal((await stack.api('/console/assets/..%2f..%2fgateway.js', { token: null })).status, 404);
    });
  });

  describe('what it shows', () => {
    it('lists both principals\' tasks under the audit trail\'s handle hash, never the handle', async () => {
      const listing = await stack.api('/tasks');
      assert.equal(listing.status, 200);
      const created = new Map(stack.audit.filter((e) => e.event === 'created').map((e) => [e.handle as string, e.handleHash as string]));
      const ids = listing.json.tasks.map((t: { id: string }) => t.id).sort();
      assert.deepEqual(ids, [created.get(aliceTask), created.get(bobTask)].sort());
      const bobs = listing.json.tasks.find((t: { tool: string }) => t.tool === 'report_status');
      assert.equal(bobs.principal.subject, 'bob');
      assert.equal(bobs.principal.issuer, stack.jwks.issuer);
      assert.equal(bobs.statusMessage, 'bob is halfway');
      assert.equal(bobs.kind, 'backend');
      assert.equal(bobs.era, 'modern');
      assert.deepEqual([bobs.clientEra, bobs.backendEra], ['modern', 'modern'], 'both the record\'s era, shown apart');
      assert.ok(bobs.ttlLeftMs > 0 && bobs.ttlLeftMs <= bobs.ttlMs);
      for (const handle of [aliceTask, bobTask]) assert.ok(!listing.text.includes(handle), 'no handle in the answer');
      for (const task of listing.json.tasks) assert.ok(!isHandleShaped(task.id));
      assert.deepEqual(listing.json.counts.tool, { slow_scan: 1, report_status: 1 });
    });

    it('filters by principal, tool and status, sorts, and pages', async () => {
      const bobs = await stack.api('/tasks?principal=bob');
      assert.deepEqual(bobs.json.tasks.map((t: { tool: string }) => t.tool), ['report_status']);
      const byTool = await stack.api('/tasks?tool=slow_scan');
      assert.deepEqual(byTool.json.tasks.map((t: { principal: { subject: string } }) => t.principal.subject), ['alice']);
      assert.equal((await stack.api('/tasks?status=completed')).json.total, 0);
      const sorted = await stack.api('/tasks?sort=tool&order=asc&limit=1');
      assert.equal(sorted.json.total, 2);
      assert.deepEqual(sorted.json.tasks.map((t: { tool: string }) => t.tool), ['report_status']);
      const second = await stack.api('/tasks?sort=tool&order=asc&limit=1&offset=1');
      assert.deepEqual(second.json.tasks.map((t: { tool: string }) => t.tool), ['slow_scan']);
      const bad = await stack.api('/tasks?status=sleeping');
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error.code, 'TG_ERR_INVALID_PARAMS');
      assert.equal((await stack.api('/tasks?limit=100000')).status, 400);
    });

    it('shows a task with its audit timeline, and principals with their live tasks', async () => {
      const listing = await stack.api('/tasks?principal=alice');
      const id = listing.json.tasks[0].id as string;
      const task = await stack.api(`/tasks/${id}`);
      assert.equal(task.status, 200);
      assert.equal(task.json.timeline[0].event, 'created');
      assert.ok(!task.text.includes(aliceTask));
      assert.equal((await stack.api('/tasks/AAAAAAAAAAAA')).status, 404);
      const principals = await stack.api('/principals');
      assert.deepEqual(principals.json.principals.map((p: { subject: string }) => p.subject).sort(), ['alice', 'bob']);
      assert.ok(principals.json.principals.every((p: { liveTasks: number; suspendedForMs: number }) => p.liveTasks === 1 && p.suspendedForMs === 0));
    });

    it('counts a task\'s polls as the store booked them, with the last poll\'s time, and the owner\'s polls per minute', async () => {
      const id = stack.audit.find((e) => e.event === 'created' && e.handle === aliceTask)!.handleHash as string;
      const before = (await stack.api(`/tasks/${id}`)).json.polls;
      const started = Date.now();
      for (let i = 0; i < 3; i++) assert.equal((await alice.raw('tasks/get', { taskId: aliceTask })).status, 200);
      const polls = (await stack.api(`/tasks/${id}`)).json.polls;
      const sum = (p: { forwarded: number; early: number; abusive: number }) => p.forwarded + p.early + p.abusive;
      assert.equal(sum(polls) - sum(before), 3, 'each poll booked once, whatever its verdict');
      assert.ok(polls.forwarded >= 1, 'the first poll of a task is forwarded');
      const last = Date.parse(polls.lastPollAt);
      assert.ok(last >= started && last <= Date.now(), `last poll at ${polls.lastPollAt}`);
      const row = (await stack.api('/tasks?principal=alice')).json.tasks[0];
      assert.deepEqual(row.polls, polls, 'the listing carries the same counts');
      assert.equal(row.thisReplica.pushListeners, 0);
      const key = row.principal.key as string;
      const principal = (await stack.api('/principals')).json.principals.find((p: { key: string }) => p.key === key);
      assert.ok(principal.thisReplica.pollsPerMinute >= 3, JSON.stringify(principal.thisReplica));
      assert.deepEqual(principal.thisReplica.refusals, { not_found: 0, denied: 0, throttled: 0 });
    });

    it('counts the push listens open on this replica for a task, and the delivery lag they saw', async () => {
      const gina = await stack.client('gina');
      const handle = await createTask(gina, 'report_status', { message: 'short', seconds: 3 });
      const id = await waitForValue(async () => (await stack.api('/tasks?principal=gina')).json.tasks[0]?.id as string | undefined, 'gina\'s task listed', 5000, 50);
      const listener = await listen(stack.gateways[0]!.url, `Bearer ${await stack.clientJwt('gina')}`, { taskIds: [handle] });
      try {
        await listener.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged');
        assert.equal((await stack.api(`/tasks/${id}`)).json.thisReplica.pushListeners, 1);
        await listener.waitFor(taskIn(handle, 'completed'), 8000, 'the completion pushed');
        await listener.ended;
        await waitFor(async () => (await stack.api(`/tasks/${id}`)).json.thisReplica.pushListeners === 0, 'the listen counted out', 5000, 50);
      } finally {
        listener.close();
      }
      // The sampler reads the lag histogram every 10 s: the delivery shows from its next tick on.
      const sample = await waitForValue(async () => (await stack.api('/samples')).json.pushLag.find((s: { deliveries: number }) => s.deliveries > 0), 'a push lag sample', 25_000, 50);
      assert.ok(sample.meanMs >= 0 && sample.p95Ms >= 0, JSON.stringify(sample));
    });

    it('shows a principal that owns no task but probes for handles: its refusals and the enumeration alert', async () => {
      const mallory = await stack.client('mallory');
      // audit.enumeration.threshold is 20: the 20th refused lookup is the alert.
      for (let i = 0; i < 19; i++) await mallory.raw('tasks/get', { taskId: `made-up-handle-${i}`.padEnd(32, 'x') });
      await mallory.raw('tasks/get', { taskId: bobTask });
      const principals = (await stack.api('/principals')).json.principals;
      const prober = principals.find((p: { tasks: number }) => p.tasks === 0);
      assert.ok(prober, JSON.stringify(principals));
      assert.equal(prober.issuer, stack.jwks.issuer);
      assert.deepEqual(prober.thisReplica.refusals, { not_found: 19, denied: 1, throttled: 0 });
      assert.equal(prober.thisReplica.enumerationAlerts, 1);
      assert.equal(prober.thisReplica.pollsPerMinute, 20);
      assert.equal(prober.suspendedForMs, 0, 'audit.enumeration.action is warn here');
      const own = (await stack.api(`/principals/${prober.key}`)).json;
      assert.deepEqual(own.thisReplica.refusals, prober.thisReplica.refusals);
      assert.ok(!JSON.stringify(principals).includes('mallory'), 'a principal seen only refused shows no subject');
    });

    it('shows upstreams and instances, the policy hash and the plots\' samples', async () => {
      const upstreams = await stack.api('/upstreams');
      const names = upstreams.json.upstreams.map((u: { name: string }) => u.name).sort();
      assert.deepEqual(names, ['plain', 'tools']);
      const tools = upstreams.json.upstreams.find((u: { name: string }) => u.name === 'tools');
      assert.equal(tools.instances[0].url, new URL(stack.backend.url).origin);
      assert.equal(tools.instances[0].healthy, true);
      assert.deepEqual(upstreams.json.upstreams.find((u: { name: string }) => u.name === 'plain').providedTools, ['slow_scan']);
      // What the gateway learns of a backend's own task support, it learns on upstreams it runs tasks for.
      assert.equal(tools.thisReplica.taskSupport, null);
      const carol = await stack.client('carol', { path: '/plain' });
      assert.equal((await carol.raw('server/discover', {})).status, 200);
      const plain = (await stack.api('/upstreams')).json.upstreams.find((u: { name: string }) => u.name === 'plain');
      assert.deepEqual(plain.thisReplica.taskSupport, { modernExtension: false, legacyTools: {}, legacyToolsLearnt: 0 });
      const policy = await stack.api('/policy');
      assert.equal(policy.json.hash, stack.gateways[0]!.gateway.policyHash);
      const samples = await stack.api('/samples');
      assert.ok(samples.json.statuses.length >= 1, 'a scan made a sample');
    });
  });

  describe('what it does', () => {
    it('needs a reason for every action', async () => {
      const id = (await stack.api('/tasks?principal=alice')).json.tasks[0].id as string;
      for (const body of [{}, { reason: '   ' }, { reason: 'ok', extra: 1 }]) {
        const answer = await stack.api(`/tasks/${id}/cancel`, { body });
        assert.equal(answer.status, 400, JSON.stringify(body));
      }
    });

    it('cancels a backend task at its backend: the owner then sees cancelled, and the act is audited and counted', async () => {
      const id = (await stack.api('/tasks?principal=alice')).json.tasks[0].id as string;
      stack.backend.stats.reset();
      const answer = await stack.api(`/tasks/${id}/cancel`, { body: { reason: 'stuck scan, INC-42' } });
      assert.equal(answer.status, 200, answer.text);
      const cancels = stack.backend.stats.requests.filter((r) => r.rpcMethod === 'tasks/cancel');
      assert.equal(cancels.length, 1, 'the backend saw the cancel');
      assert.notEqual((cancels[0]!.body as { params: { taskId: string } }).params.taskId, aliceTask, 'under its own id, not the handle');
      await waitForModernStatus(alice, aliceTask, 'cancelled');
      const audited = stack.audit.find((e) => e.event === 'operator_cancel');
      assert.deepEqual(audited?.operator, { name: 'oncall', role: 'operator', via: 'token' });
      assert.equal(audited?.operatorReason, 'stuck scan, INC-42');
      assert.equal(audited?.handleHash, id);
      const metrics = await (await fetch(`${stack.gateways[0]!.adminUrl}/metrics`)).text();
      assert.match(metrics, /taskgate_console_actions_total\{action="cancel",outcome="done"\} 1/);
      const again = await waitForValue(async () => {
        const row = (await stack.api(`/tasks/${id}`)).json;
        return row.status === 'cancelled' ? row : undefined;
      }, 'the task listed as cancelled', 5000, 50);
      assert.equal(again.status, 'cancelled');
      const twice = await stack.api(`/tasks/${id}/cancel`, { body: { reason: 'again' } });
      assert.equal(twice.status, 409);
      assert.equal(twice.json.error.code, 'TG_ERR_CONSOLE_CONFLICT');
    });

    it('cancels a task the gateway runs itself: its backend call stops, the owner sees cancelled', async () => {
      const carol = await stack.client('carol', { path: '/plain' });
      const handle = await createTask(carol, 'slow_scan', { seconds: 60 });
      const id = await waitForValue(async () => (await stack.api('/tasks?principal=carol')).json.tasks[0]?.id as string | undefined, 'carol\'s task listed', 5000, 50);
      assert.equal((await stack.api(`/tasks/${id}`)).json.kind, 'gateway');
      const abortedBefore = stack.plain!.stats.aborted;
      const answer = await stack.api(`/tasks/${id}/cancel`, { body: { reason: 'runaway call' } });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.status, 'cancelled');
      const view = await waitForModernStatus(carol, handle, 'cancelled');
      assert.equal(view.status, 'cancelled');
      await waitFor(() => stack.plain!.stats.aborted > abortedBefore, 'the backend call was stopped', 5000, 50);
    });

    it('suspends a principal\'s task requests for a while, and lifts it', async () => {
      const key = (await stack.api('/tasks?principal=bob')).json.tasks[0].principal.key as string;
      const tooLong = await stack.api(`/principals/${key}/suspend`, { body: { reason: 'x', duration: '30d' } });
      assert.equal(tooLong.status, 400);
      const suspended = await stack.api(`/principals/${key}/suspend`, { body: { reason: 'probing, INC-43', duration: '10m' } });
      assert.equal(suspended.status, 200, suspended.text);
      const refused = await bob.raw('tasks/get', { taskId: bobTask });
      assert.equal(refused.status, 429);
      assert.equal((refused.response?.error as { code: number }).code, -31003);
      assert.equal((await alice.raw('tasks/get', { taskId: aliceTask })).status, 200, 'others are not suspended');
      assert.ok((await stack.api(`/principals/${key}`)).json.suspendedForMs > 0);
      const lifted = await stack.api(`/principals/${key}/unsuspend`, { body: { reason: 'false alarm' } });
      assert.deepEqual(lifted.json, { key, wasSuspended: true });
      // Each replica trusts a suspension it knows of for at most a second.
      await waitFor(async () => (await bob.raw('tasks/get', { taskId: bobTask })).status === 200, 'bob reaches his task again', 3000, 50);
      const events = stack.audit.filter((e) => e.event === 'operator_suspend' || e.event === 'operator_unsuspend').filter((e) => e.allowed);
      assert.deepEqual(events.map((e) => [e.event, e.owner, e.operatorReason]), [
        ['operator_suspend', key, 'probing, INC-43'],
        ['operator_unsuspend', key, 'false alarm'],
      ]);
      assert.equal(events[0]!.durationMs, 600_000);
    });
  });

  it('redacts subjects under principals: redacted, and new records then keep only the issuer', async () => {
    const gateway = stack.gateways[0]!.gateway;
    const shown = gateway.policy.config;
    assert.equal((await gateway.reload({ ...shown, console: { ...shown.console, principals: 'redacted' } })).outcome, 'applied');
    try {
      const erin = await stack.client('erin');
      const handle = await createTask(erin, 'slow_scan', { seconds: 60 });
      const listing = await stack.api('/tasks');
      assert.ok(listing.json.tasks.length >= 2);
      for (const task of listing.json.tasks) {
        assert.equal(task.principal.subject, undefined, 'no subject shown');
        assert.equal(task.principal.issuer, stack.jwks.issuer);
      }
      assert.ok(!listing.text.includes('erin') && !listing.text.includes('"bob"'));
      const record = await gateway.store.getTask(handle);
      assert.equal(record?.creatorIssuer, stack.jwks.issuer);
      assert.equal(record?.creatorSubject, undefined, 'the store never held erin\'s subject');
    } finally {
      await gateway.reload(shown);
    }
  });

  it('answers 404 everywhere while a reload has turned it off, and serves again once it is back on', async () => {
    const gateway = stack.gateways[0]!.gateway;
    const on = gateway.policy.config;
    const off = { ...on, console: { ...on.console, enabled: false } };
    assert.equal((await gateway.reload(off)).outcome, 'applied');
    for (const path of ['/console', '/console/assets/console.js', '/console/api/v1/me', '/console/api/v1/tasks']) {
      const res = await stack.api(path);
      assert.equal(res.status, 404, path);
    }
    assert.equal((await gateway.reload(on)).outcome, 'applied');
    assert.equal((await stack.api('/me')).status, 200);
    const policy = await stack.api('/policy');
    assert.deepEqual(policy.json.reloads.slice(0, 2).map((r: { outcome: string; changed: string[] }) => [r.outcome, r.changed]), [
      ['applied', ['console.enabled']],
      ['applied', ['console.enabled']],
    ]);
  });
});
