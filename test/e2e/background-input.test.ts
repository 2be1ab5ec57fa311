/**
 * Background calls whose backend asks for input mid-call. 2025-11-25: the backend's
 * elicitation/create reaches the SDK 1.x client inside its next status call's response stream
 * (related to the background call), and the client's answer goes back to the backend's call;
 * a question asked before the call was detached waits for it. 2026-07-28: the backend's
 * InputRequiredResult is the status call's answer, and the 2.x client's own MRTR retry of the
 * status call resumes the backend call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { viewOf } from './support/background-agent.js';
import { startTaskStack, type TaskStack } from './support/task-harness.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const TIMEOUT_MS = 1500;
const BACKGROUND = { tools: 'all', detachAfter: '300ms', statusWait: '700ms' };
const relatedTaskOf = (value: { _meta?: Record<string, unknown> }) => (value._meta?.[RELATED_TASK] as { taskId?: string } | undefined)?.taskId;

describe('background calls whose backend asks for input, 2025-11-25', () => {
  let stack: TaskStack;
  let client: Client;
  const questions: ElicitRequest[] = [];
  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }, undefined, { timeout: TIMEOUT_MS }) as Promise<CallToolResult>;

  before(async () => {
    stack = await startTaskStack({ era: 'legacy', plain: true, backgroundCalls: BACKGROUND, tasks: { poll: { default: '200ms' } } });
    client = new Client({ name: 'colour-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      questions.push(request);
      return { action: 'accept', content: { color: 'teal' } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.gw.url), { requestInit: { headers: { authorization: await stack.bearer('alice') } } }));
    await client.listTools();
  });
  after(async () => {
    await client?.close();
    await stack?.close();
  });

  const finish = async (handle: string) => {
    for (let i = 0; i < 30; i++) {
      const result = await call('taskgate_task_status', { taskId: handle });
      if (!/still running|waiting for/.test(viewOf(result).text)) return result;
    }
    assert.fail('the background call did not end');
  };

  it('a question asked after the call was detached reaches the client on its status call, and the answer finishes the call', async () => {
    questions.length = 0;
    const handle = relatedTaskOf(await call('elicit_color', { delayMs: 600 }));
    assert.ok(handle);
    const result = await finish(handle);
    assert.deepEqual(result.content, [{ type: 'text', text: 'Colour: teal' }]);
    assert.equal(questions.length, 1);
    assert.equal(relatedTaskOf(questions[0]!.params as { _meta?: Record<string, unknown> }), handle, 'the question names the background call');
  });

  it('a question asked before the call was detached waits for it, then reaches the client the same way', async () => {
    questions.length = 0;
    const first = await call('elicit_color', {});
    const handle = relatedTaskOf(first);
    assert.ok(handle, `detached: ${JSON.stringify(first)}`);
    assert.deepEqual((await finish(handle)).content, [{ type: 'text', text: 'Colour: teal' }]);
    assert.equal(questions.length, 1);
  });
});

describe('background calls whose backend asks for input, 2026-07-28', () => {
  let stack: TaskStack;
  let client: ModernClient;
  let asked = 0;
  before(async () => {
    stack = await startTaskStack({ era: 'modern', plain: true, workMs: 600, backgroundCalls: BACKGROUND, tasks: { poll: { default: '200ms' } } });
    client = new ModernClient({ name: 'name-host', version: '1.0.0' }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'auto' } });
    client.setRequestHandler('elicitation/create', async () => {
      asked++;
      return { action: 'accept', content: { name: 'Grace' } };
    });
    await client.connect(new ModernTransport(new URL(stack.gw.url), { requestInit: { headers: { authorization: await stack.bearer('alice') } } }));
    await client.listTools();
  });
  after(async () => {
    await client?.close();
    await stack?.close();
  });

  it('the backend\'s InputRequiredResult is the status call\'s answer; the client\'s retry resumes the backend call', async () => {
    stack.modern[0]!.stats.reset();
    const first = await client.callTool({ name: 'slow_then_ask', arguments: {} }, { timeout: TIMEOUT_MS });
    const handle = relatedTaskOf(first);
    assert.ok(handle, `detached: ${JSON.stringify(first)}`);
    let result: Awaited<ReturnType<ModernClient['callTool']>> | undefined;
    for (let i = 0; i < 30; i++) {
      result = await client.callTool({ name: 'taskgate_task_status', arguments: { taskId: handle } }, { timeout: TIMEOUT_MS });
      if (!/still running/.test(viewOf(result).text)) break;
    }
    assert.equal(viewOf(result).text, 'Hello at last, Grace');
    assert.equal(asked, 1);
    const calls = stack.modern[0]!.stats.requests.filter((r) => r.rpcMethod === 'tools/call').map((r) => (r.body as { params: Record<string, unknown> }).params);
    assert.equal(calls.length, 2, 'the call, then its retry with the answers');
    assert.deepEqual(calls[1]!.inputResponses, { name: { action: 'accept', content: { name: 'Grace' } } });
  });
});
