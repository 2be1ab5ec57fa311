/**
 * The taskgate demo: the example MCP server (real SDK 1.x, task tools), taskgate in front of
 * it on the embedded memory store with JWT auth from a local identity provider, and a
 * scripted client that narrates what happens to two principals' tasks; then two servers with
 * no tasks at all (SDK 1.x and 2.x as they come), made task-capable by the gateway; then a
 * host with no tasks that calls a tool longer than its request timeout (a background call). The
 * gateway's own log and audit trail go to files the demo names at the end.
 *
 *   npm ci && npm run demo
 *
 * Everything listens on 127.0.0.1 with ports chosen by the OS, and stops by itself.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { parseConfig } from '../../src/config/index.js';
import { buildGateway } from '../../src/gateway.js';
import { buildLoggerOptions } from '../../src/observability/logger.js';
import { startModernTaskServer } from '../modern-task-server/server.js';
import { backgroundCallStory } from './background-story.js';
import { legacyPlainServer, modernPlainServer } from './provided-story.js';
import { startJwksServer } from '../identity-provider/issuer.js';
import { startExampleServer } from '../mcp-server/server.js';

const say = (text: string) => console.log(text);
const step = (n: number, text: string) => console.log(`\n[${n}] ${text}`);
const detail = (text: string) => console.log(`    ${text}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  say('taskgate demo: an MCP task gateway in front of an unmodified MCP server\n');

  step(1, 'Starting the example MCP server (SDK 1.x, 2025-11-25 task tools) and an identity provider');
  const backend = await startExampleServer({ name: 'demo-backend' });
  const plain2025 = await startExampleServer({ name: 'plain-2025', tasks: false });
  const plain2026 = await startModernTaskServer({ name: 'plain-2026', tasks: false, workMs: 2000 });
  const issuer = await startJwksServer({ algs: ['ES256'] });
  detail(`backend at ${backend.url}; token issuer ${issuer.issuer}, keys at ${issuer.url}`);
  detail(`and two servers with no tasks at all: ${plain2025.url} (SDK 1.x), ${plain2026.url} (SDK 2.x)`);

  step(2, 'Starting taskgate in front of it (policy examples/demo/policy.yaml, memory store)');
  const logs = await mkdtemp(join(tmpdir(), 'taskgate-demo-'));
  const config = parseConfig(await readFile(new URL('./policy.yaml', import.meta.url), 'utf8'), {
    env: {
      TASKGATE_DEMO_UPSTREAM: new URL(backend.url).origin,
      TASKGATE_DEMO_PLAIN_2025: new URL(plain2025.url).origin,
      TASKGATE_DEMO_PLAIN_2026: new URL(plain2026.url).origin,
      TASKGATE_DEMO_ISSUER: issuer.issuer,
      TASKGATE_DEMO_JWKS: issuer.url,
      TASKGATE_DEMO_AUDIT: join(logs, 'audit.log'),
    },
    source: 'examples/demo/policy.yaml',
  });
  // The gateway's JSON log goes to a file, so that it does not interleave with the story.
  const logger = pino(buildLoggerOptions(config.logging.level), pino.destination({ dest: join(logs, 'gateway.log'), sync: true }));
  const gateway = await buildGateway(config, { logger });
  const { url, adminUrl } = await gateway.listen();
  await waitUntilReady(adminUrl);
  const mcpUrl = `${url}/mcp`;
  detail(`gateway at ${mcpUrl}; admin (health, metrics) at ${adminUrl}`);

  const connect = async (subject: string): Promise<Client> => {
    const token = await issuer.mint({ sub: subject, aud: 'http://127.0.0.1/mcp' });
    const client = new Client({ name: `${subject}-agent`, version: '1.0.0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  };
  const clients: Client[] = [];
  const backendPolls = () => backend.stats.requests.filter((r) => r.rpcMethod === 'tasks/get').length;
  try {
    step(3, 'alice and bob connect through the gateway, each with their own OAuth token');
    const alice = await connect('alice');
    const bob = await connect('bob');
    const { tools } = await alice.listTools();
    detail(`server: ${alice.getServerVersion()?.name}; ${tools.length} tools; tasks/list served by the gateway: ${alice.getServerCapabilities()?.tasks?.list ? 'yes' : 'no'}`);

    step(4, 'alice starts slow_scan as a task');
    const { task } = await alice.request(
      { method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 3 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const handle = task.taskId;
    detail(`task created; alice holds the gateway's handle ${handle}`);
    detail(`status ${task.status}; poll interval ${task.pollInterval} ms (the backend said 200 ms; the policy floor is 1 s)`);

    step(5, 'alice polls too fast: early polls are answered from the gateway\'s snapshot, then refused');
    const before = backendPolls();
    for (let i = 1; i <= 5; i++) {
      try {
        const polled = await alice.experimental.tasks.getTask(handle);
        detail(`poll ${i}: ${polled.status}${polled.statusMessage ? ` (${polled.statusMessage})` : ''}`);
      } catch (error) {
        detail(`poll ${i}: refused — ${String(error).replace(/^.*?\{/, '{').slice(0, 140)}`);
      }
    }
    detail(`the backend saw ${backendPolls() - before} of those 5 polls`);
    const seen = backend.stats.requests.find((r) => r.rpcMethod === 'tasks/get')?.body as { params: { taskId: string } };
    detail(`between gateway and backend the task is ${seen.params.taskId}: that id never reaches a client`);

    step(6, 'bob tries alice\'s task, then a task that does not exist: the same answer, by design');
    for (const [label, id] of [['alice\'s handle', handle], ['an unknown handle', 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']] as const) {
      try {
        await bob.experimental.tasks.getTask(id);
        detail(`${label}: allowed (this should not happen)`);
      } catch (error) {
        detail(`${label}: ${String(error)}`);
      }
    }

    step(7, 'alice polls at the pace she was given until the task is done, then fetches the result');
    for (;;) {
      await sleep(1000);
      const polled = await alice.experimental.tasks.getTask(handle);
      detail(`tasks/get → ${polled.status}${polled.statusMessage ? ` (${polled.statusMessage})` : ''}`);
      if (polled.status === 'completed' || polled.status === 'failed' || polled.status === 'cancelled') break;
    }
    const result = await alice.experimental.tasks.getTaskResult(handle, CallToolResultSchema);
    detail(`tasks/result → ${result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ')}`);

    step(8, 'bob starts a long scan and cancels it; each sees only their own tasks');
    const long = await bob.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    const cancelled = await bob.experimental.tasks.cancelTask(long.task.taskId);
    detail(`bob: tasks/cancel → ${cancelled.status}`);
    detail(`tasks/list for alice: ${(await alice.experimental.tasks.listTasks()).tasks.map((t) => `${t.taskId.slice(0, 8)}… ${t.status}`).join(', ')}`);
    detail(`tasks/list for bob:   ${(await bob.experimental.tasks.listTasks()).tasks.map((t) => `${t.taskId.slice(0, 8)}… ${t.status}`).join(', ')}`);

    step(9, 'A 2025-11-25 server with no tasks at all: the gateway runs its slow tool as a task');
    await legacyPlainServer(`${url}/plain-2025`, await issuer.mint({ sub: 'alice', aud: 'http://127.0.0.1/plain-2025' }), { step: (t) => step(9, t), detail });

    step(10, 'A 2026-07-28 server with no task runtime: a call that outlasts promoteAfter becomes a task');
    await modernPlainServer(`${url}/plain-2026`, await issuer.mint({ sub: 'alice', aud: 'http://127.0.0.1/plain-2026' }), { step: (t) => step(10, t), detail });

    step(11, 'A host that knows no tasks calls a tool that takes longer than its request timeout');
    await backgroundCallStory(plain2025.url, `${url}/plain-2025`, await issuer.mint({ sub: 'alice', aud: 'http://127.0.0.1/plain-2025' }), { step: (t) => step(11, t), detail });

    step(12, 'What the gateway counted (from its Prometheus endpoint)');
    const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
    for (const line of metrics.split('\n')) {
      if (/^taskgate_(polls_total|task_operations_total|jwt_verifications_total|provided_tasks_ended_total|background_calls_total)\{/.test(line)) detail(line);
    }
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    await gateway.close();
    await Promise.all([backend.close(), plain2025.close(), plain2026.close(), issuer.close()]);
  }
  await summariseLogs(logs);
  say('\ndemo finished');
}

/** Where the gateway's log and audit trail went, and what the audit trail holds. */
async function summariseLogs(folder: string): Promise<void> {
  const lines = async (file: string) => (await readFile(join(folder, file), 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const audit = await lines('audit.log');
  const events = new Map<string, number>();
  for (const line of audit) {
    const event = (JSON.parse(line) as { event?: string }).event ?? '?';
    events.set(event, (events.get(event) ?? 0) + 1);
  }
  say(`\nThe gateway's JSON log (${(await lines('gateway.log')).length} lines): ${join(folder, 'gateway.log')}`);
  say(`Its audit trail (${audit.length} events: ${[...events].map(([event, n]) => `${event} ${n}`).join(', ')}): ${join(folder, 'audit.log')}`);
}

async function waitUntilReady(adminUrl: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${adminUrl}/readyz`);
    await res.text();
    if (res.ok) return;
    await sleep(25);
  }
  throw new Error('the gateway did not become ready');
}

main().catch((error: unknown) => {
  console.error('demo failed:', error);
  process.exitCode = 1;
});
