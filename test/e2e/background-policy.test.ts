/**
 * Background calls where the policy or the backend says no: a backend tool with a task tool's
 * name wins (the gateway lists and answers neither of its own, and detaches nothing); a tool
 * no tools/list answer has shown yet may have an outputSchema, so it stays plain under
 * `outputSchema: plain`, and `detach` detaches such tools too; at the principal's live-task
 * limit a call stays a plain call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { legacyClient, startTaskStack, type TaskStack } from './support/task-harness.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const BACKGROUND = { tools: 'all', detachAfter: '300ms', statusWait: '700ms' };
const relatedTaskOf = (result: CallToolResult) => (result._meta?.[RELATED_TASK] as { taskId?: string } | undefined)?.taskId;
const call = (client: Client, name: string, args: Record<string, unknown>, timeout = 5000) =>
  client.callTool({ name, arguments: args }, undefined, { timeout }) as Promise<CallToolResult>;

describe('a backend tool with the name of a task tool', () => {
  let stack: TaskStack;
  let alice: Client;
  before(async () => {
    stack = await startTaskStack({ era: 'legacy', plain: true, backgroundCalls: { ...BACKGROUND, toolNames: { status: 'echo' } } });
    alice = await legacyClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('wins: listed once, as the backend lists it, answered by the backend; no task tools are added and nothing is detached', async () => {
    const { tools } = await alice.listTools();
    assert.equal(tools.filter((t) => t.name === 'echo').length, 1);
    assert.equal(tools.find((t) => t.name === 'echo')?.description, 'Returns its text argument unchanged.');
    assert.ok(!tools.some((t) => t.name === 'taskgate_task_cancel'));
    assert.deepEqual((await call(alice, 'echo', { text: 'mine' })).content, [{ type: 'text', text: 'mine' }]);
    const long = await call(alice, 'slow_report', { seconds: 0.8, steps: 1 });
    assert.deepEqual(long.content, [{ type: 'text', text: 'Report ready after 0.8s' }]);
    assert.equal(relatedTaskOf(long), undefined);
  });
});

describe('background calls and the limits of the policy', () => {
  let stack: TaskStack;
  before(async () => {
    stack = await startTaskStack({ era: 'legacy', plain: true, backgroundCalls: BACKGROUND, tasks: { maxLivePerPrincipal: 1 } });
  });
  after(async () => {
    await stack?.close();
  });

  it('a tool this replica has not seen listed stays plain (it may have an outputSchema); once listed it is detached', async () => {
    const carol = await legacyClient(stack, 'carol');
    try {
      const unseen = await call(carol, 'slow_report', { seconds: 0.8, steps: 1 });
      assert.equal(relatedTaskOf(unseen), undefined);
      assert.deepEqual(unseen.content, [{ type: 'text', text: 'Report ready after 0.8s' }]);
      await carol.listTools();
      const handle = relatedTaskOf(await call(carol, 'slow_report', { seconds: 0.8, steps: 1 }));
      assert.ok(handle);
      await call(carol, 'taskgate_task_cancel', { taskId: handle });
    } finally {
      await carol.close();
    }
  });

  it('at the principal\'s live-task limit a call stays a plain call, answered when the backend answers', async () => {
    const dave = await legacyClient(stack, 'dave');
    try {
      await dave.listTools();
      const first = relatedTaskOf(await call(dave, 'slow_report', { seconds: 5, steps: 1 }));
      assert.ok(first, 'the first long call is detached');
      const second = await call(dave, 'slow_report', { seconds: 0.8, steps: 1 });
      assert.equal(relatedTaskOf(second), undefined, 'tasks.maxLivePerPrincipal 1: the second stays plain');
      assert.deepEqual(second.content, [{ type: 'text', text: 'Report ready after 0.8s' }]);
      await call(dave, 'taskgate_task_cancel', { taskId: first });
    } finally {
      await dave.close();
    }
  });
});

describe('outputSchema: detach', () => {
  let stack: TaskStack;
  before(async () => {
    stack = await startTaskStack({ era: 'legacy', plain: true, backgroundCalls: { ...BACKGROUND, outputSchema: 'detach' } });
  });
  after(async () => {
    await stack?.close();
  });

  it('detaches a tool with an outputSchema too, and its structured result comes back through the status tool', async () => {
    // A host that does not validate structuredContent: this client never listed the tools.
    const erin = await legacyClient(stack, 'erin');
    try {
      const handle = relatedTaskOf(await call(erin, 'slow_structured', { seconds: 0.8 }));
      assert.ok(handle);
      let result: CallToolResult;
      do result = await call(erin, 'taskgate_task_status', { taskId: handle });
      while (/still running/.test(JSON.stringify(result.content)));
      assert.deepEqual(result.structuredContent, { report: 'ready', seconds: 0.8 });
    } finally {
      await erin.close();
    }
  });
});
