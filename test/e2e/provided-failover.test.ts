/**
 * A gateway-run task's backend call, like a client's own new work, moves to another instance
 * when its instance refuses the connection (nothing reached it), and the refusing instance
 * cools down (the soak found them failing instead: issue #29). Here the upstream's first
 * instance is a closed port in front of a live 2026 backend with no tasks of its own.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from '../support/redis-servers.js';
import type { ModernTaskClient } from './support/modern-client.js';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import { waitForModernStatus } from './support/task-waits.js';

describe('gateway-run tasks on an upstream whose first instance refuses connections', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  before(async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    stack = await startTaskStack({ era: 'modern', plain: true, workMs: 300, tasks: { poll: { default: '100ms' } }, providedTasks: { tools: 'all', promoteAfter: '100ms' } });
    const live = new URL(stack.backends[0]!.url).origin;
    // The same stack's policy with the dead instance first: the round-robin offers it to every other new call.
    await stack.gw.gateway.reload({
      ...stack.gw.gateway.policy.config,
      upstreams: { tools: { ...stack.gw.gateway.policy.config.upstreams.tools!, instances: [dead, live], cooldown: 200 } },
    });
    alice = await modernClient(stack, 'alice');
  });
  after(async () => {
    await alice?.close();
    await stack?.close();
  });

  it('runs every call on the live instance: tasks that complete, never a 503', async () => {
    const answers = [];
    for (let i = 0; i < 6; i++) {
      answers.push(await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 0.3 } }));
      // Past the cooldown, the dead instance is offered again.
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.response));
    const tasks = answers.map((answer) => answer.response?.result).filter((result) => result?.resultType === 'task');
    assert.equal(tasks.length, 6, 'every call outlasted promoteAfter and became a task');
    for (const task of tasks) assert.equal((await waitForModernStatus(alice, String(task!.taskId), 'completed')).status, 'completed');
    assert.equal(stack.received('tools/call'), 6, 'each call reached the live backend once');
  });
});
