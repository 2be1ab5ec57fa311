/**
 * Policy reload through gateway.reload / gateway.reloadFile: routes added and removed, what is
 * kept for an unchanged upstream, a request in flight finishing under its own policy, the
 * logging level, and the refusals (an invalid file, a key that needs a restart), with their
 * metrics and log lines and /readyz ready throughout.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { checkConfigCommand, type Config } from '../../src/config/index.js';
import { hashGaugeValue, sha256Hex } from '../../src/reload/policy-source.js';
import { startExampleServer } from '../../examples/mcp-server/server.js';
import { LEGACY_POST_HEADERS, initializeBody, startGateway, testPolicy, type PolicyOverrides, type Stack, metricSample } from './support/harness.js';
import { captureLines, watchReadiness, type CapturedLines } from './support/reload-harness.js';
import { waitFor } from '../support/wait.js';

const ROUTES_BOTH = { routes: [{ path: '/mcp', upstream: 'tools' }, { path: '/other', upstream: 'tools', upstreamPath: '/mcp' }] };

async function initializeStatus(stack: Stack, path: string): Promise<number> {
  const res = await fetch(stack.gw.url.replace(/\/mcp$/, path), { method: 'POST', headers: LEGACY_POST_HEADERS, body: initializeBody() });
  await res.arrayBuffer();
  return res.status;
}

describe('policy reload', () => {
  let stack: Stack;
  let log: CapturedLines;
  let dir: string;
  let readiness: ReturnType<typeof watchReadiness>;
  const policy = (overrides: PolicyOverrides = {}): Config => testPolicy(stack.servers.map((s) => s.url), overrides);

  before(async () => {
    log = captureLines();
    dir = await mkdtemp(join(tmpdir(), 'taskgate-reload-'));
    const servers = [await startExampleServer({ name: 'backend-0' })];
    const gw = await startGateway(testPolicy(servers.map((s) => s.url), { logging: { level: 'info' } }), { logger: pino({ level: 'info' }, log.stream) });
    stack = {
      servers,
      gw,
      async close() {
        await gw.close();
        await Promise.all(servers.map((s) => s.close()));
      },
    };
    readiness = watchReadiness(stack.gw.adminUrl);
  });
  // Each test starts from the policy the stack started with.
  afterEach(() => stack.gw.gateway.reload(policy({ logging: { level: 'info' } })));
  after(async () => {
    const statuses = await readiness?.stop();
    await stack?.close();
    await rm(dir, { recursive: true, force: true });
    assert.ok(statuses && statuses.length > 0 && statuses.every((s) => s === 200), `/readyz answered ${[...new Set(statuses)].join(', ')}`);
  });

  it('adds and removes routes: each request sees one policy, new routes need no registration', async () => {
    assert.equal(await initializeStatus(stack, '/other'), 404);
    const added = await stack.gw.gateway.reload(policy({ ...ROUTES_BOTH, logging: { level: 'info' } }));
    assert.equal(added.outcome, 'applied');
    assert.deepEqual(added.changed, ['routes[1]']);
    assert.equal(await initializeStatus(stack, '/other'), 200);
    assert.equal(await initializeStatus(stack, '/mcp'), 200);
    const removed = await stack.gw.gateway.reload(policy({ routes: [{ path: '/other', upstream: 'tools', upstreamPath: '/mcp' }], logging: { level: 'info' } }));
    assert.equal(removed.outcome, 'applied');
    assert.equal(await initializeStatus(stack, '/mcp'), 404);
    assert.equal(await initializeStatus(stack, '/other'), 200);
    const line = log.find('policy reloaded').at(-1)!;
    assert.equal(line.event, 'policy_reload');
    assert.equal(line.outcome, 'applied');
    assert.ok((line.changed as string[]).includes('routes[0].path'));
  });

  it('keeps the agent of an unchanged upstream, and closes a replaced one only once its request is done', async () => {
    const before = stack.gw.gateway.policy;
    const agent = before.agents.get('tools')!;
    const pool = before.matchRoute('/mcp')!.backend.pool;
    await stack.gw.gateway.reload(policy({ ...ROUTES_BOTH, logging: { level: 'info' } }));
    assert.equal(stack.gw.gateway.policy.agents.get('tools'), agent, 'a route change keeps the agent');
    assert.equal(stack.gw.gateway.policy.matchRoute('/mcp')!.backend.pool, pool, 'and the pool, with its cool-downs');

    const client = new Client({ name: 'in-flight', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.gw.url)));
    const started = stack.gw.gateway.policy;
    try {
      const calls = () => stack.servers[0]!.stats.requests.filter((r) => r.rpcMethod === 'tools/call').length;
      const seen = calls();
      const slow = client.callTool({ name: 'notify_progress', arguments: { count: 10, delayMs: 100 } });
      await waitFor(() => calls() > seen, 'the slow call to reach the backend');
      assert.ok(started.inFlight.size >= 1, 'the call (and the client\'s GET stream, if open) run on this policy');
      const result = await stack.gw.gateway.reload(policy({ ...ROUTES_BOTH, upstreams: { tools: { instances: stack.servers.map((s) => new URL(s.url).origin), cooldown: '30s', timeouts: { headers: '20s' } } }, logging: { level: 'info' } }));
      assert.equal(result.outcome, 'applied');
      const replacedAgent = started.agents.get('tools')!;
      assert.notEqual(stack.gw.gateway.policy.agents.get('tools'), replacedAgent, 'new timeouts, new agent');
      assert.equal(replacedAgent.closed, false, 'the replaced agent stays open while its request runs');
      assert.equal(await metricSample(stack.gw.adminUrl, 'taskgate_config_draining_policies'), 1);
      const answer = await slow;
      assert.match(JSON.stringify(answer.content), /sent 10 notifications/, 'the call finished on the policy it started with');
    } finally {
      // Its GET stream, if any, started on the old policy too, and holds it until it ends.
      await client.close();
    }
    await waitFor(async () => (await metricSample(stack.gw.adminUrl, 'taskgate_config_draining_policies')) === 0, 'the replaced policy to close');
    assert.equal(started.agents.get('tools')!.closed, true);
    assert.equal(started.inFlight.size, 0);
  });

  it('changes the logging level, for requests that start afterwards', async () => {
    const rejectedLines = () => log.find('request rejected').length;
    await initializeStatus(stack, '/nowhere');
    assert.equal(rejectedLines(), 0, 'debug lines are not written at info');
    const result = await stack.gw.gateway.reload(policy({ logging: { level: 'debug' } }));
    assert.deepEqual(result.changed, ['logging.level']);
    await initializeStatus(stack, '/nowhere');
    assert.equal(rejectedLines(), 1);
    await stack.gw.gateway.reload(policy({ logging: { level: 'info' } }));
    await initializeStatus(stack, '/nowhere');
    assert.equal(rejectedLines(), 1, 'and back');
  });

  it('counts a reload that changes nothing, and moves the hash gauge with the file', async () => {
    const file = join(dir, 'same.yaml');
    const text = yamlOf(stack, {});
    await writeFile(file, text);
    const unchanged = () => metricSample(stack.gw.adminUrl, 'taskgate_config_reloads_total{outcome="unchanged"}');
    const counted = (await unchanged()) ?? 0;
    const result = await stack.gw.gateway.reloadFile(file);
    assert.equal(result?.outcome, 'unchanged');
    assert.equal(result?.hash, sha256Hex(text));
    assert.equal(stack.gw.gateway.policyHash, sha256Hex(text));
    assert.equal(await metricSample(stack.gw.adminUrl, 'taskgate_config_hash'), hashGaugeValue(sha256Hex(text)));
    assert.equal(await unchanged(), counted + 1);
    assert.equal(await stack.gw.gateway.reloadFile(file, { onlyIfChanged: true }), undefined, 'the same bytes again are skipped');
  });

  it('refuses an invalid file whole, logging every problem as check-config prints it', async () => {
    const file = join(dir, 'invalid.yaml');
    await writeFile(file, yamlOf(stack, { extraRoute: '  - { path: /b, upstream: nowhere }\n', colour: 'colour: red\n' }));
    const before = stack.gw.gateway.policy;
    const result = await stack.gw.gateway.reloadFile(file);
    assert.equal(result?.outcome, 'invalid');
    assert.equal(stack.gw.gateway.policy, before, 'nothing changed');
    const printed: string[] = [];
    assert.equal(await checkConfigCommand(file, { log: () => undefined, error: (line) => printed.push(line) }), 1);
    assert.deepEqual(result?.problems, printed);
    assert.equal(printed.length, 2);
    const line = log.find('policy reload refused').at(-1)!;
    assert.deepEqual(line.problems, printed);
    assert.equal(line.level, 50);
    assert.equal(await metricSample(stack.gw.adminUrl, 'taskgate_config_last_reload_successful'), 0);
    assert.equal(await initializeStatus(stack, '/b'), 404);
    assert.equal(await initializeStatus(stack, '/mcp'), 200);
  });

  it('refuses a change of a key fixed at start, applying none of the rest, and says a restart is needed', async () => {
    const before = stack.gw.gateway.policy;
    const result = await stack.gw.gateway.reload(policy({ ...ROUTES_BOTH, logging: { level: 'info' }, limits: { maxBodyBytes: '2MiB' }, listen: { host: '127.0.0.1', port: 1 } }));
    assert.equal(result.outcome, 'restart_required');
    assert.equal(stack.gw.gateway.policy, before);
    assert.equal(await initializeStatus(stack, '/other'), 404, 'the route added alongside is not applied');
    assert.deepEqual(result.problems, [
      'policy listen.port: fixed while taskgate runs; restart it to apply this (nothing in this policy was applied)',
      'policy limits.maxBodyBytes: fixed while taskgate runs; restart it to apply this (nothing in this policy was applied)',
    ]);
    assert.match(log.find('policy reload refused').at(-1)!.msg as string, /need a restart/);
    assert.equal(await metricSample(stack.gw.adminUrl, 'taskgate_config_reloads_total{outcome="restart_required"}'), 1);
    const applied = await stack.gw.gateway.reload(policy({ logging: { level: 'warn' } }));
    assert.equal(applied.outcome, 'applied');
    assert.equal(await metricSample(stack.gw.adminUrl, 'taskgate_config_last_reload_successful'), 1);
  });

  it('applies new upstream credentials, and names the changed secret by its path only, never its value', async () => {
    const file = join(dir, 'secret.yaml');
    const credentials = '    credentials: { type: bearer, token: "${RELOAD_TEST_TOKEN}" }\n';
    try {
      process.env.RELOAD_TEST_TOKEN = 'first-secret-token-value';
      await writeFile(file, yamlOf(stack, { credentials }));
      assert.equal((await stack.gw.gateway.reloadFile(file))?.outcome, 'applied');
      process.env.RELOAD_TEST_TOKEN = 'second-secret-token-value';
      const result = await stack.gw.gateway.reloadFile(file);
      assert.equal(result?.outcome, 'applied');
      assert.deepEqual(result?.changed, ['upstreams.tools.credentials.token']);
      assert.equal(await initializeStatus(stack, '/mcp'), 200);
      const sent = stack.servers[0]!.stats.requests.at(-1)!.headers.authorization;
      assert.equal(sent, 'Bearer second-secret-token-value', 'the backend gets the new credentials');
      for (const line of log.lines) assert.doesNotMatch(line, /secret-token-value/);
    } finally {
      delete process.env.RELOAD_TEST_TOKEN;
    }
  });
});

/** The stack's policy as a YAML file, with optional extras spliced in. */
function yamlOf(stack: Stack, extra: { extraRoute?: string; colour?: string; credentials?: string }): string {
  const instances = stack.servers.map((s) => new URL(s.url).origin).join(', ');
  return [
    'listen: { host: 127.0.0.1, port: 0 }',
    'admin: { host: 127.0.0.1, port: 0 }',
    'publicUrl: http://127.0.0.1',
    'auth: { mode: none }',
    'upstreams:',
    '  tools:',
    `    instances: [${instances}]`,
    '    cooldown: 30s',
    // As the running policy has it (testPolicy keeps the bridge's probes off).
    '    bridge: off',
    ...(extra.credentials ? [extra.credentials.trimEnd()] : []),
    'routes:',
    '  - { path: /mcp, upstream: tools, upstreamPath: /mcp }',
    ...(extra.extraRoute ? [extra.extraRoute.trimEnd()] : []),
    'logging: { level: info }',
    ...(extra.colour ? [extra.colour.trimEnd()] : []),
    '',
  ].join('\n');
}
