/**
 * Every task object the gateway writes itself validates against the official schema of its
 * era and the client library's own result schema, on every path that builds one: creation
 * results, forwarded polls, polls answered from the snapshot, early polls answered from the
 * record alone, cancels, the 2025 tasks/list, and status notifications. One principal holds
 * tasks of both generations on two routes, as a client using both SDKs does.
 *
 * The status message of each comes from a backend tool whose text the caller chooses: every
 * path shows the record's sanitised text (no bidi, zero-width, control characters or lone
 * surrogates, cut on code points), never the backend's raw text.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema, TaskStatusNotificationSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createModernTaskClient } from './support/modern-client.js';
import { startMixedEraStack, type MixedEraStack, type StoreKind } from './support/mixed-era-stack.js';
import { assertTaskObject } from './support/task-schemas.js';
import { answersPing, SHARED_REDIS } from '../support/redis-servers.js';
import { waitFor, waitForValue } from '../support/wait.js';

/** tasks.statusMessageMaxLength for these stacks. */
const MAX = 30;
/**
 * Bidi override, zero-width space, an isolate, BEL, NUL, a line break, then emoji up to past
 * the limit (a UTF-16 cut at 30 falls inside the twelfth emoji) and a lone surrogate.
 */
const HOSTILE = 'ok\u202Eexe.txt\u200B\u2066\u0007\u0000 one\ntwo ' + '😀'.repeat(20) + '\uD800';
/** What every client must see instead, written out by hand: 18 safe characters and 12 whole emoji. */
const SHOWN = 'okexe.txt one two ' + '😀'.repeat(12);

const redisUp = await answersPing(SHARED_REDIS.port, SHARED_REDIS.host);
const stores: StoreKind[] = redisUp ? ['memory', 'redis'] : ['memory'];
if (!redisUp) console.warn(`\n*** task-objects: Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port} is not answering; the Redis store variant is skipped\n`);

function resultOf(message: JSONRPCMessage | undefined): Record<string, unknown> {
  assert.ok(message && 'result' in message, `no result: ${JSON.stringify(message)}`);
  return message.result as Record<string, unknown>;
}

/** An SDK 1.x client as `subject` on the 2025 route, keeping every message it received as it came off the wire. */
async function legacyPeer(stack: MixedEraStack, subject: string) {
  const client = new Client({ name: 'objects', version: '1.0.0' });
  const notified: unknown[] = [];
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => void notified.push(n));
  const transport = new StreamableHTTPClientTransport(new URL(stack.legacyUrl), { requestInit: { headers: { authorization: await stack.bearer(subject, '/mcp') } } });
  await client.connect(transport);
  const received: JSONRPCMessage[] = [];
  const deliver = transport.onmessage!;
  transport.onmessage = (message: JSONRPCMessage) => {
    received.push(message);
    deliver(message);
  };
  /** The raw message answering the last request the client sent. */
  const lastAnswer = (): JSONRPCMessage => [...received].reverse().find((m) => 'result' in m || 'error' in m)!;
  return {
    client,
    received,
    notified,
    lastAnswer,
    async create(name: string, args: Record<string, unknown>) {
      const { task } = await client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl: 600_000 } } }, CreateTaskResultSchema);
      const raw = resultOf(lastAnswer());
      assertTaskObject('legacy', 'creation', raw, `creation of ${name}`);
      return { id: task.taskId, raw: raw.task as Record<string, unknown> };
    },
    async getTask(taskId: string) {
      await client.experimental.tasks.getTask(taskId);
      const raw = resultOf(lastAnswer());
      assertTaskObject('legacy', 'get', raw);
      return raw;
    },
    close: () => client.close(),
  };
}

/** An ext-tasks client as `subject` on the 2026 route; its raw exchanges are what came off the wire. */
async function modernPeer(stack: MixedEraStack, subject: string) {
  const client = await createModernTaskClient(stack.modernUrl, { headers: { authorization: await stack.bearer(subject, '/modern') } });
  return {
    client,
    async create(name: string, args: Record<string, unknown>) {
      const exchange = await client.raw('tools/call', { name, arguments: args });
      const result = exchange.response?.result;
      assertTaskObject('modern', 'creation', result, `creation of ${name}`);
      return { id: String(result!.taskId), raw: result! };
    },
    async getTask(taskId: string) {
      const exchange = await client.raw('tasks/get', { taskId });
      assert.equal(exchange.status, 200);
      assertTaskObject('modern', 'get', exchange.response?.result);
      return exchange.response!.result!;
    },
    close: () => client.close(),
  };
}

type LegacyPeer = Awaited<ReturnType<typeof legacyPeer>>;
type ModernPeer = Awaited<ReturnType<typeof modernPeer>>;

for (const store of stores) {
  describe(`task objects the gateway writes (${store} store)`, () => {
    let stack: MixedEraStack;
    const peers: (LegacyPeer | ModernPeer)[] = [];
    // Each test acts as a principal of its own, so that no test sees another's tasks.
    const legacy = async (subject: string) => {
      const peer = await legacyPeer(stack, subject);
      peers.push(peer);
      return peer;
    };
    const modern = async (subject: string) => {
      const peer = await modernPeer(stack, subject);
      peers.push(peer);
      return peer;
    };
    before(async () => {
      // A 1 s floor on poll intervals, so that a poll 150 ms after another is early by a wide margin.
      stack = await startMixedEraStack({ store, tasks: { statusMessageMaxLength: MAX, poll: { floor: '1s' }, tools: { fail_task: { maxTtl: '2m' } } } });
    });
    after(async () => {
      await Promise.all(peers.map((p) => p.close()));
      await stack?.close();
    });

    describe('2025-11-25, through the SDK 1.x client', () => {
      it('creation results (a maxTtl tool\'s among them), a forwarded and a cached poll, a cancel', async () => {
        const alice = await legacy('legacy-1');
        const scan = await alice.create('slow_scan', { seconds: 30 });
        const capped = await alice.create('fail_task', { delayMs: 10 });
        assert.equal(capped.raw.ttl, 120_000, 'the tool\'s maxTtl caps the lifetime');
        const reporter = await alice.create('report_status', { message: HOSTILE, seconds: 30 });
        assert.equal(reporter.raw.statusMessage, SHOWN, 'relayed in the creation result');

        const polls = () => stack.legacy.stats.requests.filter((r) => r.rpcMethod === 'tasks/get').length;
        await alice.getTask(scan.id);
        const forwarded = polls();
        await alice.getTask(scan.id);
        assert.equal(polls(), forwarded, 'the second poll was answered from the snapshot');
        assert.equal((await alice.getTask(reporter.id)).statusMessage, SHOWN, 'a forwarded poll');
        assert.equal((await alice.getTask(reporter.id)).statusMessage, SHOWN, 'a cached poll');

        await alice.client.experimental.tasks.cancelTask(scan.id);
        assertTaskObject('legacy', 'cancel', resultOf(alice.lastAnswer()));
      });

      it('an early poll while the first one is still at the backend, answered from the record', async () => {
        const alice = await legacy('legacy-2');
        const reporter = await alice.create('report_status', { message: HOSTILE, seconds: 30 });
        stack.delay.tasksGet = 600;
        try {
          const first = alice.client.experimental.tasks.getTask(reporter.id);
          await sleep(150);
          const early = await alice.getTask(reporter.id);
          assert.equal(early.statusMessage, SHOWN, 'an early poll answered from the record');
          await first;
        } finally {
          stack.delay.tasksGet = 0;
        }
      });

      it('tasks/list through the SDK client: working, failed, cancelled and capped tasks, and no 2026 task of the same principal', async () => {
        const alice = await legacy('legacy-3');
        const other = await modern('legacy-3');
        await other.create('slow_scan', { seconds: 30 });
        const working = await alice.create('slow_scan', { seconds: 30 });
        const failing = await alice.create('fail_task', { delayMs: 10 });
        const doomed = await alice.create('slow_scan', { seconds: 30 });
        const reporter = await alice.create('report_status', { message: HOSTILE, seconds: 30 });
        await alice.client.experimental.tasks.cancelTask(doomed.id);
        await waitFor(async () => (await alice.getTask(failing.id)).status === 'failed', 'the failing task to fail', 12_000, 300);

        const listed = await alice.client.experimental.tasks.listTasks();
        assertTaskObject('legacy', 'list', resultOf(alice.lastAnswer()));
        assert.deepEqual(new Set(listed.tasks.map((t) => t.taskId)), new Set([working.id, failing.id, doomed.id, reporter.id]), 'exactly the 2025 tasks');
        assert.deepEqual(new Set(listed.tasks.map((t) => t.status)), new Set(['working', 'failed', 'cancelled']));
        assert.equal(listed.tasks.find((t) => t.taskId === reporter.id)?.statusMessage, SHOWN, 'listed');
      });

      it('status notifications on the GET stream', async () => {
        const alice = await legacy('legacy-4');
        const reporter = await alice.create('report_status', { message: HOSTILE, seconds: 30 });
        const mine = await waitForValue(
          () => alice.received.find((m) => 'method' in m && m.method === 'notifications/tasks/status' && (m.params as { taskId?: string }).taskId === reporter.id) as Record<string, unknown> | undefined,
          'a status notification to reach the client',
          10_000,
          50,
        );
        assert.ok(mine, 'no status notification reached the client');
        assertTaskObject('legacy', 'notification', mine);
        assert.equal((mine.params as { statusMessage?: string }).statusMessage, SHOWN, 'notified');
        assert.ok(alice.notified.length > 0, 'the SDK client accepted the notifications');
        // Learnt from the notification, kept by the record: a listing shows the same text.
        const listed = await alice.client.experimental.tasks.listTasks();
        assert.equal(listed.tasks.find((t) => t.taskId === reporter.id)?.statusMessage, SHOWN, 'listed after a notification');
      });
    });

    describe('2026-07-28, through the ext-tasks client', () => {
      it('creation results, a forwarded and a cached poll, a cancel ack', async () => {
        const alice = await modern('modern-1');
        const reporter = await alice.create('report_status', { message: HOSTILE, seconds: 30 });
        assert.equal(reporter.raw.statusMessage, SHOWN, 'relayed in the creation result');
        assert.equal((await alice.getTask(reporter.id)).statusMessage, SHOWN, 'a forwarded poll');
        assert.equal((await alice.getTask(reporter.id)).statusMessage, SHOWN, 'a cached poll');
        const cancelled = await alice.client.raw('tasks/cancel', { taskId: reporter.id });
        assertTaskObject('modern', 'cancel', cancelled.response?.result);
      });

      it('an early poll while the first one is still at the backend, answered from the record', async () => {
        const alice = await modern('modern-2');
        const reporter = await alice.create('report_status', { message: HOSTILE, seconds: 30 });
        stack.delay.tasksGet = 600;
        try {
          const first = alice.client.raw('tasks/get', { taskId: reporter.id });
          await sleep(150);
          const early = await alice.getTask(reporter.id);
          assert.equal(early.statusMessage, SHOWN, 'an early poll answered from the record');
          assertTaskObject('modern', 'get', (await first).response?.result);
        } finally {
          stack.delay.tasksGet = 0;
        }
      });

      it('polls of every status, forwarded and then cached', async () => {
        const alice = await modern('modern-3');
        const tasks = [await alice.create('slow_scan', { seconds: 0.1 }), await alice.create('fail_task', {}), await alice.create('tool_error', {})];
        const statuses: unknown[] = [];
        for (const task of tasks) {
          for (let i = 0; i < 40; i++) {
            const polled = await alice.getTask(task.id);
            if (polled.status !== 'working') {
              statuses.push(polled.status);
              break;
            }
            await sleep(300);
          }
          // Polled once more at once: the answer comes from the snapshot.
          await alice.getTask(task.id);
        }
        assert.deepEqual(statuses, ['completed', 'failed', 'completed']);
      });
    });
  });
}
