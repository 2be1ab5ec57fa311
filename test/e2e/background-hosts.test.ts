/**
 * Background calls through the client libraries real hosts are built on, neither of which
 * speaks a task generation: the Vercel AI SDK's MCP client (@ai-sdk/mcp) and LangChain's MCP
 * adapters (@langchain/mcp-adapters). Each host gives a tool call a time limit well under the
 * tool's duration; directly the call is cut off, through taskgate a scripted agent loop reads
 * the detached text, calls the status tool it names and gets the tool's own result.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMCPClient } from '@ai-sdk/mcp';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { runAgent, viewOf, type AgentView, type CallTool } from './support/background-agent.js';
import { startTaskStack, type TaskStack } from './support/task-harness.js';

/** The host's limit on one tool call, in place of a minute. */
const HOST_TIMEOUT_MS = 1500;
const LONG_CALL = { seconds: 2.5, steps: 1 };

type AiSdkClient = Awaited<ReturnType<typeof createMCPClient>>;

/** An AI SDK host: the tools as the model gets them, each call bounded by an abort signal. */
async function aiSdkHost(url: string, headers: Record<string, string>): Promise<{ client: AiSdkClient; callTool: CallTool }> {
  const client = await createMCPClient({ transport: { type: 'http', url, headers } });
  const tools = await client.tools();
  const callTool: CallTool = async (name, args) => {
    const tool = tools[name];
    assert.ok(tool?.execute, `the host knows the tool ${name}`);
    const result = await tool.execute(args, { toolCallId: `call-${name}`, messages: [], abortSignal: AbortSignal.timeout(HOST_TIMEOUT_MS) });
    return viewOf(result);
  };
  return { client, callTool };
}

/** A LangChain host: the adapters' tools with a default timeout; a tool error is a ToolException. */
async function langChainHost(url: string, headers: Record<string, string>): Promise<{ client: MultiServerMCPClient; callTool: CallTool }> {
  const client = new MultiServerMCPClient({
    mcpServers: { gw: { transport: 'http', url, headers, automaticSSEFallback: false } },
    defaultToolTimeout: HOST_TIMEOUT_MS,
  });
  const tools = await client.getTools();
  const callTool: CallTool = async (name, args) => {
    const tool = tools.find((t) => t.name === name);
    assert.ok(tool, `the host knows the tool ${name}`);
    try {
      return langChainView(await tool.invoke(args));
    } catch (error) {
      return { text: error instanceof Error ? error.message : String(error), isError: true };
    }
  };
  return { client, callTool };
}

/** What a LangChain tool returns: its text, or content blocks when the result has _meta. */
function langChainView(content: unknown): AgentView {
  if (typeof content === 'string') return { text: content, isError: false };
  return { ...viewOf({ content: Array.isArray(content) ? content : [content] }), isError: false };
}

describe('background calls through host-side MCP client libraries', () => {
  let stack: TaskStack;
  let direct: ExampleServer;
  let headers: Record<string, string>;

  before(async () => {
    stack = await startTaskStack({
      era: 'legacy',
      plain: true,
      backgroundCalls: { tools: ['slow_report'], detachAfter: '300ms', statusWait: '700ms' },
      tasks: { poll: { default: '200ms' } },
    });
    direct = await startExampleServer({ name: 'direct', tasks: false });
    headers = { authorization: await stack.bearer('alice') };
  });
  after(async () => {
    await direct?.close();
    await stack?.close();
  });

  it('@ai-sdk/mcp: directly the long call is cut off by the host\'s limit', async () => {
    const host = await aiSdkHost(direct.url, {});
    try {
      await assert.rejects(host.callTool('slow_report', LONG_CALL), /abort|timed? ?out/i);
    } finally {
      await host.client.close();
    }
  });

  it('@ai-sdk/mcp: through taskgate an agent loop gets the result through the status tool', async () => {
    const host = await aiSdkHost(stack.gw.url, headers);
    try {
      const run = await runAgent(host.callTool, 'slow_report', LONG_CALL);
      assert.match(run.first.text, /still running, in the background/);
      assert.ok(run.checks.length >= 1);
      assert.deepEqual(run.final, { text: 'Report ready after 2.5s', isError: false });
    } finally {
      await host.client.close();
    }
  });

  it('@langchain/mcp-adapters: directly the long call is cut off by the host\'s timeout', async () => {
    const host = await langChainHost(direct.url, {});
    try {
      const view = await host.callTool('slow_report', LONG_CALL);
      assert.equal(view.isError, true);
      assert.match(view.text, /timed out|timeout/i);
    } finally {
      await host.client.close();
    }
  });

  it('@langchain/mcp-adapters: through taskgate an agent loop gets the result through the status tool', async () => {
    const host = await langChainHost(stack.gw.url, headers);
    try {
      const run = await runAgent(host.callTool, 'slow_report', LONG_CALL);
      assert.match(run.first.text, /still running, in the background/);
      assert.deepEqual(run.final, { text: 'Report ready after 2.5s', isError: false });
    } finally {
      await host.client.close();
    }
  });
});
