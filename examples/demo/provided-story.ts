/**
 * The demo's second act: servers with no tasks at all, as most deployed MCP servers are,
 * become task-capable through the gateway (upstreams.*.providedTasks in the demo policy).
 * 2025-11-25 through the SDK 1.x client's task API; 2026-07-28 as raw JSON-RPC over fetch, so
 * the wire shows what the gateway answers (no SDK hides it).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface Narrator {
  step(text: string): void;
  detail(text: string): void;
}

/** 2025: the SDK client asks for a task; the gateway creates it at once and runs the plain call. */
export async function legacyPlainServer(url: string, token: string, say: Narrator): Promise<void> {
  const client = new Client({ name: 'alice-agent', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  try {
    const tasks = client.getServerCapabilities()?.tasks;
    const { tools } = await client.listTools();
    const slow = tools.find((tool) => tool.name === 'slow_report');
    say.detail(`the backend declares no tasks; through the gateway: capabilities.tasks ${JSON.stringify(tasks)}, slow_report taskSupport ${slow?.execution?.taskSupport}`);
    const stream = client.experimental.tasks.callToolStream({ name: 'slow_report', arguments: { seconds: 2, steps: 4 } });
    let last = '';
    for await (const event of stream) {
      if (event.type === 'taskCreated') say.detail(`taskCreated: ${event.task.taskId} (the gateway runs the call; the backend got a plain tools/call)`);
      if (event.type === 'taskStatus') {
        const line = `${event.task.status}${event.task.statusMessage ? ` (${event.task.statusMessage})` : ''}`;
        if (line !== last) say.detail(`taskStatus: ${line}`);
        last = line;
      }
      if (event.type === 'result') say.detail(`result: ${(event.result as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ')}`);
      if (event.type === 'error') say.detail(`error: ${event.error.message}`);
    }
  } finally {
    await client.close();
  }
}

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'alice-agent', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

/** 2026: the server decides per request, so the gateway promotes a call that runs long. */
export async function modernPlainServer(url: string, token: string, say: Narrator): Promise<void> {
  let id = 0;
  const call = async (method: string, params: Record<string, unknown>, name?: string) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': method,
        ...(name === undefined ? {} : { 'mcp-name': name }),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: MODERN_META } }),
    });
    return ((await response.json()) as { result: Record<string, unknown> }).result;
  };
  const quick = await call('tools/call', { name: 'quick_echo', arguments: { text: 'hello' } }, 'quick_echo');
  say.detail(`tools/call quick_echo → a plain result at once: ${JSON.stringify(quick.content)}`);
  const started = Date.now();
  const created = await call('tools/call', { name: 'slow_scan', arguments: { seconds: 3 } }, 'slow_scan');
  const taskId = String(created.taskId);
  say.detail(`tools/call slow_scan → after ${Math.round((Date.now() - started) / 100) / 10}s (promoteAfter) resultType "${String(created.resultType)}", task ${taskId}`);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, Number(created.pollIntervalMs ?? 1000)));
    const task = await call('tasks/get', { taskId }, taskId);
    if (task.status !== 'working') {
      const text = (task.result as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text;
      say.detail(`tasks/get → ${String(task.status)}, the result inline: ${text ?? JSON.stringify(task.error)}`);
      return;
    }
    say.detail(`tasks/get → ${String(task.status)}`);
  }
}
