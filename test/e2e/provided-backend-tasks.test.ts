/**
 * The gateway never runs a task twice: behind a backend that has tasks of its own, a tool the
 * backend offers as a task stays a backend task even where the policy lists it, once the
 * gateway has seen the backend say so (2025 tools/list, 2026 server/discover); before that, the
 * backend is sent a plain call, so the task still runs once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { PROTOCOL_VERSION } from './support/modern-client.js';
import { legacyClient, modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { waitForValue } from '../support/wait.js';

describe('a backend with tasks of its own, behind providedTasks: all', () => {
  let legacy: TaskStack;
  let modern: TaskStack;
  let alice: Client;
  before(async () => {
    legacy = await startTaskStack({ era: 'legacy', providedTasks: { tools: 'all' } });
    modern = await startTaskStack({ era: 'modern', providedTasks: { tools: 'all', promoteAfter: '100ms' } });
    alice = await legacyClient(legacy, 'alice');
  });
  after(async () => {
    await alice?.close();
    await legacy?.close();
    await modern?.close();
  });

  it('2025: a backend task tool stays a backend task; a plain tool becomes the gateway\'s', async () => {
    const { tools } = await alice.listTools();
    assert.equal(tools.find((t) => t.name === 'slow_scan')?.execution?.taskSupport, 'optional', 'the backend\'s own');
    assert.equal(tools.find((t) => t.name === 'echo')?.execution?.taskSupport, 'optional', 'the gateway\'s');
    const backendTask = await alice.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 5 }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    const call = legacy.backends[0]!.stats.requests.filter((r) => r.rpcMethod === 'tools/call').at(-1);
    assert.ok((call?.body as { params: { task?: unknown } }).params.task, 'the backend was asked for its own task');
    await alice.experimental.tasks.getTask(backendTask.task.taskId);
    assert.equal(legacy.received('tasks/get'), 1, 'its polls reach the backend');
    await alice.experimental.tasks.cancelTask(backendTask.task.taskId);

    const gatewayTask = await alice.request({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    // The gateway answers at once and sends the call after: wait for it to arrive.
    const echoCall = () => legacy.backends[0]!.stats.requests.find((r) => r.rpcMethod === 'tools/call' && (r.body as { params: { name: string } }).params.name === 'echo');
    const plain = await waitForValue(echoCall, 'the gateway\'s call of echo at the backend', 1000);
    assert.equal((plain?.body as { params: { task?: unknown } }).params.task, undefined, 'the gateway sent a plain call');
    await alice.experimental.tasks.getTask(gatewayTask.task.taskId);
    assert.equal(legacy.received('tasks/get'), 1, 'the gateway\'s task is polled at the gateway');
  });

  it('2026: once server/discover showed the backend\'s extension, its tasks stay its own; before, a plain call runs once', async () => {
    // No server/discover seen yet (the SDK client sends one when it connects, so this one is
    // raw): the gateway runs the task, and the backend is told of no extension.
    const meta = {
      'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    };
    const first = await fetch(modern.gw.url, {
      method: 'POST',
      headers: {
        authorization: await modern.bearer('alice'),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': PROTOCOL_VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': 'slow_scan',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds: 2 }, _meta: meta } }),
    });
    const before = ((await first.json()) as { result: { resultType: string } }).result;
    assert.equal(before.resultType, 'task');
    assert.equal(modern.modern[0]!.tasks.count(), 0, 'the backend made no task of its own');

    const client = await modernClient(modern, 'alice');
    try {
      const after = await client.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 2 } });
      assert.equal(after.response?.result?.resultType, 'task');
      assert.equal(modern.modern[0]!.tasks.count(), 1, 'now the backend\'s own task');
      await client.raw('tasks/get', { taskId: after.response?.result?.taskId });
      assert.equal(modern.received('tasks/get'), 1);
    } finally {
      await client.close();
    }
  });
});
