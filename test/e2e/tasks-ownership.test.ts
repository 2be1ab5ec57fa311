/**
 * Ownership: a foreign, an unknown and an expired handle get one and the same answer on every
 * tasks/* method of both generations, and the backend is never asked; on the memory store
 * and on Redis (the shared one, under a key prefix of this run's own), whose lookups and
 * expiry take another path.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { setTimeout as sleep } from 'node:timers/promises';
import { mintHandle } from '../../src/tasks/handle.js';
import { answersPing, SHARED_REDIS, sharedRedisSpace } from '../support/redis-servers.js';
import { LEGACY_POST_HEADERS } from './support/harness.js';
import { startTaskStack, type TaskStack } from './support/task-harness.js';
import { messagesIn } from './support/reply-messages.js';

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'probe', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } },
};

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

async function call(
  stack: TaskStack,
  era: 'legacy' | 'modern',
  subject: string,
  method: string,
  params: Record<string, unknown>,
  id: number,
  sessionId?: string,
): Promise<Answer> {
  const authorization = await stack.bearer(subject);
  const headers: Record<string, string> =
    era === 'legacy'
      ? { ...LEGACY_POST_HEADERS, authorization, ...(sessionId ? { 'mcp-session-id': sessionId } : {}) }
      : {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': method,
          authorization,
          ...(typeof params.taskId === 'string' ? { 'mcp-name': params.taskId } : { 'mcp-name': String(params.name) }),
        };
  const body = { jsonrpc: '2.0', id, method, params: era === 'modern' ? { ...params, _meta: MODERN_META } : params };
  const res = await request(stack.gw.url, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.statusCode, contentType: String(res.headers['content-type']), body: await res.body.text() };
}

/** The JSON-RPC result of a reply (JSON or a one-message SSE stream). */
function resultOf(answer: Answer): Record<string, unknown> {
  return messagesIn(answer.body, answer.contentType)[0]!.result as Record<string, unknown>;
}

const redisUp = await answersPing(SHARED_REDIS.port, SHARED_REDIS.host);
if (!redisUp) console.warn(`\n*** tasks-ownership: Redis at ${SHARED_REDIS.host}:${SHARED_REDIS.port} is not answering; the Redis store variant is skipped\n`);
const stores = redisUp ? (['memory', 'redis'] as const) : (['memory'] as const);

for (const [era, storeKind] of (['legacy', 'modern'] as const).flatMap((e) => stores.map((s) => [e, s] as const))) {
  describe(`one answer for foreign, unknown and expired tasks (${era}, ${storeKind} store)`, () => {
    let stack: TaskStack;
    const space = sharedRedisSpace();
    const store = storeKind === 'redis' ? space.storePolicy() : { type: 'memory' };
    let owned: string;
    let expired: string;
    const methods = era === 'legacy' ? ['tasks/get', 'tasks/result', 'tasks/cancel'] : ['tasks/get', 'tasks/update', 'tasks/cancel'];

    before(async () => {
      stack = await startTaskStack({ era, tasks: { tools: { fail_task: { maxTtl: '700ms' } } }, policy: { store } });
      const sessionId = era === 'legacy' ? await openSession(stack, 'alice') : undefined;
      const create = (name: string, args: Record<string, unknown>, id: number) =>
        call(stack, era, 'alice', 'tools/call', era === 'legacy' ? { name, arguments: args, task: { ttl: 60_000 } } : { name, arguments: args }, id, sessionId);
      owned = resultTaskId(resultOf(await create('slow_scan', { seconds: 30 }, 1)), era);
      // fail_task ends at once and, by policy, expires after 700ms. Polled once it has ended,
      // so the gateway knows it is terminal and its expiry cancels nothing upstream.
      expired = resultTaskId(resultOf(await create('fail_task', {}, 2)), era);
      await sleep(350);
      const status = resultOf(await call(stack, era, 'alice', 'tasks/get', { taskId: expired }, 3)).status;
      assert.equal(status, 'failed');
      await sleep(1500);
    });
    after(async () => {
      await stack?.close();
      if (storeKind === 'redis') await space.removeKeys();
    });

    for (const method of methods) {
      it(`${method}: byte-identical answers, backend never contacted`, async () => {
        for (const b of stack.backends) b.stats.reset();
        const params = (taskId: string) => (method === 'tasks/update' ? { taskId, inputResponses: {} } : { taskId });
        const foreign = await call(stack, era, 'mallory', method, params(owned), 10);
        const unknown = await call(stack, era, 'alice', method, params(mintHandle()), 10);
        const gone = await call(stack, era, 'alice', method, params(expired), 10);
        const malformed = await call(stack, era, 'alice', method, params('786512e2-9e0d-44bd-8f29-789f320fe840'), 10);
        for (const answer of [unknown, gone, malformed]) assert.deepEqual(answer, foreign);
        assert.equal(foreign.status, 200);
        assert.deepEqual(JSON.parse(foreign.body), {
          jsonrpc: '2.0',
          id: 10,
          error: { code: -32602, message: 'Failed to retrieve task: Task not found' },
        });
        const contacted = stack.backends.flatMap((b) => b.stats.requests.map((r) => r.rpcMethod));
        assert.deepEqual(contacted, []);
      });
    }

    it('the owner still reaches its task (the refusals are not vacuous)', async () => {
      const answer = await call(stack, era, 'alice', 'tasks/get', { taskId: owned }, 11);
      assert.equal(resultOf(answer).taskId, owned);
      assert.ok(stack.received('tasks/get') >= 1);
    });
  });
}

async function openSession(stack: TaskStack, subject: string): Promise<string> {
  const authorization = await stack.bearer(subject);
  const init = await request(stack.gw.url, {
    method: 'POST',
    headers: { ...LEGACY_POST_HEADERS, authorization },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'probe', version: '0' } } }),
  });
  await init.body.text();
  const sessionId = String(init.headers['mcp-session-id']);
  const done = await request(stack.gw.url, {
    method: 'POST',
    headers: { ...LEGACY_POST_HEADERS, authorization, 'mcp-session-id': sessionId },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await done.body.text();
  return sessionId;
}

function resultTaskId(result: Record<string, unknown>, era: 'legacy' | 'modern'): string {
  return era === 'legacy' ? String((result.task as { taskId: string }).taskId) : String(result.taskId);
}
