/**
 * The demo's third act: a host that knows no tasks (the SDK 1.x client, as hosts use it: listTools,
 * then callTool with its request timeout, lowered here from 60 s to 3 s so the demo stays short)
 * calls a tool that takes longer than that timeout. Directly, the call times out and its work is
 * lost; through the gateway (upstreams.plain-2025.backgroundCalls in the demo policy) the call is
 * answered after detachAfter with a text for the model, and the status tool the gateway added
 * to tools/list returns the tool's own result once it is done.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Narrator } from './provided-story.js';

/** The host's request timeout in the demo (the SDK's default is 60 s). */
const HOST_TIMEOUT_MS = 3000;
const LONG_CALL = { name: 'slow_report', arguments: { seconds: 5, steps: 5 } };

const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ');

async function host(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'no-tasks-host', version: '1.0.0' });
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

export async function backgroundCallStory(directUrl: string, gatewayUrl: string, token: string, say: Narrator): Promise<void> {
  const direct = await host(directUrl);
  try {
    await direct.callTool(LONG_CALL, undefined, { timeout: HOST_TIMEOUT_MS });
    say.detail('directly: answered (this should not happen)');
  } catch (error) {
    say.detail(`directly, with a ${HOST_TIMEOUT_MS / 1000} s request timeout: ${String(error)}`);
  } finally {
    await direct.close();
  }

  const client = await host(gatewayUrl, token);
  try {
    const { tools } = await client.listTools();
    say.detail(`through the gateway, tools/list also shows: ${tools.filter((t) => t.name.startsWith('taskgate_')).map((t) => t.name).join(', ')}`);
    const started = Date.now();
    const first = (await client.callTool(LONG_CALL, undefined, { timeout: HOST_TIMEOUT_MS })) as CallToolResult;
    say.detail(`tools/call slow_report → after ${Math.round((Date.now() - started) / 100) / 10}s (detachAfter), what the model reads:`);
    for (const line of textOf(first).split('\n')) say.detail(`  | ${line}`);
    const taskId = (first._meta?.['io.modelcontextprotocol/related-task'] as { taskId: string }).taskId;
    for (;;) {
      const answer = (await client.callTool({ name: 'taskgate_task_status', arguments: { taskId } }, undefined, { timeout: HOST_TIMEOUT_MS })) as CallToolResult;
      if (!/still running/.test(textOf(answer))) {
        say.detail(`taskgate_task_status → the tool's own result: ${textOf(answer)}`);
        return;
      }
      const status = /latest status: ("[^"]*")/.exec(textOf(answer))?.[1];
      say.detail(`taskgate_task_status → still running${status ? ` (${status})` : ''}`);
    }
  } finally {
    await client.close();
  }
}
