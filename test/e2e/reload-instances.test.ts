/**
 * Upstream instances changed by a reload, with real SDK clients and servers: a removed
 * instance gets no new work, while the tasks and sessions on it stay reachable (it drains);
 * an added instance takes new work; sessions begun while an upstream had one instance stay
 * on it when a reload adds a second.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startExampleServer, type ExampleServer } from '../../examples/mcp-server/server.js';
import { legacyClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { taskStackPolicy } from './support/reload-harness.js';
import { waitFor } from '../support/wait.js';

const TASKS = { ttl: { max: '5m' } };

async function createTask(client: Client, seconds: number): Promise<string> {
  const created = await client.request({ method: 'tools/call', params: { name: 'slow_scan', arguments: { seconds }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
  return created.task.taskId;
}

async function waitForCompletion(client: Client, taskId: string): Promise<void> {
  await waitFor(async () => (await client.experimental.tasks.getTask(taskId)).status === 'completed', `task ${taskId} to complete`);
}

/** How many requests of `rpcMethod` each server received. */
function counts(servers: Array<{ stats: { requests: Array<{ rpcMethod?: string }> } }>, rpcMethod: string): number[] {
  return servers.map((server) => server.stats.requests.filter((r) => r.rpcMethod === rpcMethod).length);
}

async function echo(client: Client, text: string): Promise<string> {
  const result = await client.callTool({ name: 'echo', arguments: { text } });
  return (result.content as Array<{ text: string }>)[0]!.text;
}

describe('instances changed by a reload', () => {
  it('removed: no new work, its tasks and sessions stay reachable; added: takes new work', async () => {
    const stack: TaskStack = await startTaskStack({ era: 'legacy', count: 2, tasks: TASKS });
    const added: ExampleServer = await startExampleServer({ name: 'legacy-2' });
    const clients: Client[] = [];
    const connect = async (subject: string) => {
      const client = await legacyClient(stack, subject);
      clients.push(client);
      return client;
    };
    try {
      const alice = await connect('alice');
      const aliceOn = counts(stack.backends, 'initialize').indexOf(1);
      assert.notEqual(aliceOn, -1);
      const removed = stack.backends[aliceOn]!;
      const kept = stack.backends[1 - aliceOn]!;
      const longTask = await createTask(alice, 4);
      const shortTask = await createTask(alice, 0.3);

      const result = await stack.gw.gateway.reload(taskStackPolicy(stack, { tasks: TASKS }, [kept.url]));
      assert.equal(result.outcome, 'applied');
      assert.ok(result.changed.length > 0 && result.changed.every((path) => path.startsWith('upstreams.tools.instances[')), result.changed.join(', '));

      // New work goes to the kept instance only.
      const initializesBefore = counts([removed], 'initialize')[0]!;
      for (const subject of ['bob', 'carol', 'dave']) {
        const client = await connect(subject);
        assert.equal(await echo(client, `hello ${subject}`), `hello ${subject}`);
      }
      assert.equal(counts([removed], 'initialize')[0], initializesBefore, 'the removed instance got a new session');

      // What lives on the removed instance is still reached there, by its owner.
      const pollsBefore = counts([removed], 'tasks/get')[0]!;
      await waitForCompletion(alice, shortTask);
      assert.ok(counts([removed], 'tasks/get')[0]! > pollsBefore, 'the task was polled on the instance that holds it');
      assert.equal(await echo(alice, 'still here'), 'still here', 'the session on the draining instance goes on');

      // Adding an instance: new sessions are balanced over the kept and the added one.
      const grown = await stack.gw.gateway.reload(taskStackPolicy(stack, { tasks: TASKS }, [kept.url, added.url]));
      assert.equal(grown.outcome, 'applied');
      for (const subject of ['erin', 'frank', 'grace', 'heidi']) await connect(subject);
      assert.ok(counts([added], 'initialize')[0]! >= 1, 'the added instance takes new sessions');
      assert.equal(counts([removed], 'initialize')[0], initializesBefore);
      // Two reloads later, the first removal still drains.
      await waitForCompletion(alice, longTask);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await stack.close();
      await added.close();
    }
  });

  it('keeps sessions begun on a sole instance there when a reload adds a second', async () => {
    const stack = await startTaskStack({ era: 'legacy', count: 1, tasks: TASKS });
    const second = await startExampleServer({ name: 'legacy-1' });
    let alice: Client | undefined;
    try {
      alice = await legacyClient(stack, 'alice');
      const task = await createTask(alice, 0.5);
      // One instance: the session was never recorded in the store.
      assert.equal((await stack.gw.gateway.reload(taskStackPolicy(stack, { tasks: TASKS }, [stack.backends[0]!.url, second.url]))).outcome, 'applied');
      for (let i = 0; i < 4; i++) assert.equal(await echo(alice, `call ${i}`), `call ${i}`);
      await waitForCompletion(alice, task);
      assert.equal(counts([second], 'tools/call')[0], 0, 'the session stayed on its instance');
    } finally {
      await alice?.close();
      await stack.close();
      await second.close();
    }
  });
});
