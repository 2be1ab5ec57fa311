/**
 * The taskgate demo: the example MCP server (real SDK 1.x, task tools), taskgate in front of
 * it on the embedded memory store, and a scripted client that narrates what happens.
 *
 *   npm ci && npm run demo
 *
 * Everything listens on 127.0.0.1 with ports chosen by the OS, and stops by itself.
 */
import { readFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { parseConfig } from '../../src/config/index.js';
import { buildGateway } from '../../src/gateway.js';
import { startExampleServer } from '../mcp-server/server.js';

const say = (text: string) => console.log(text);
const step = (n: number, text: string) => console.log(`\n[${n}] ${text}`);
const detail = (text: string) => console.log(`    ${text}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect(url: string, name: string): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function main(): Promise<void> {
  say('taskgate demo: an MCP task gateway in front of an unmodified MCP server\n');

  step(1, 'Starting the example MCP server (SDK 1.x, 2025-11-25 task tools)');
  const backend = await startExampleServer({ name: 'demo-backend' });
  detail(`backend listening at ${backend.url}`);

  step(2, 'Starting taskgate in front of it (policy examples/demo/policy.yaml, memory store)');
  const policyText = await readFile(new URL('./policy.yaml', import.meta.url), 'utf8');
  const config = parseConfig(policyText, {
    env: { TASKGATE_DEMO_UPSTREAM: new URL(backend.url).origin },
    source: 'examples/demo/policy.yaml',
  });
  const gateway = await buildGateway(config);
  const { url, adminUrl } = await gateway.listen();
  const mcpUrl = `${url}/mcp`;
  detail(`gateway listening at ${mcpUrl}; admin (health, metrics) at ${adminUrl}`);

  const clients: Client[] = [];
  try {
    step(3, 'A client connects through the gateway');
    const alice = await connect(mcpUrl, 'alice-agent');
    clients.push(alice);
    const { tools } = await alice.listTools();
    detail(`server: ${alice.getServerVersion()?.name}; tools: ${tools.map((t) => t.name).join(', ')}`);

    step(4, 'The client starts slow_scan as a task');
    const created = await alice.request(
      { method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 2 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    detail(`task created: ${taskId} (status ${created.task.status}, pollInterval ${created.task.pollInterval ?? '-'} ms)`);

    step(5, 'The client polls tasks/get until the task is done');
    for (;;) {
      const task = await alice.experimental.tasks.getTask(taskId);
      detail(`tasks/get → ${task.status}${task.statusMessage ? ` (${task.statusMessage})` : ''}`);
      if (task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled') break;
      await sleep(Math.max(task.pollInterval ?? 500, 500));
    }
    const result = await alice.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    detail(`tasks/result → ${result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ')}`);

    step(6, 'The client starts a long scan and cancels it');
    const long = await alice.request(
      { method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 30 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    await sleep(600);
    const cancelled = await alice.experimental.tasks.cancelTask(long.task.taskId);
    detail(`tasks/cancel → ${cancelled.status}`);

    say('\nNot shown yet (open issues): task handles and owner binding (a second principal refused like an');
    say('unknown task), OAuth principals, and poll governance (early polls throttled). See README.md.');

    step(7, 'What the gateway counted (from its Prometheus endpoint)');
    const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
    for (const line of metrics.split('\n')) {
      if (line.startsWith('taskgate_http_requests_total{')) detail(line);
    }
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    await gateway.close();
    await backend.close();
  }
  say('\ndemo finished');
}

main().catch((error: unknown) => {
  console.error('demo failed:', error);
  process.exitCode = 1;
});
