// One session's status push over the real memory store: only the session's own provided tasks
// are pushed, once per status change, and a client too far behind has them dropped and counted.
import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import { createParser } from 'eventsource-parser';
import pino from 'pino';
import { createSseTap } from '../../../../src/mcp/sse-tap.js';
import { createMetrics, type GatewayMetrics } from '../../../../src/observability/metrics.js';
import { SessionOutput } from '../../../../src/provided/legacy-push/session-output.js';
import { SessionWatch, type SessionKey } from '../../../../src/provided/legacy-push/session-watch.js';
import { MemoryStore } from '../../../../src/store/memory-store.js';
import type { TaskRecord, TaskStatus } from '../../../../src/task-model/task-record.js';
import { waitFor } from '../../../support/wait.js';
import { providedRecord, providedState } from '../../../support/task-records.js';

const KEY: SessionKey = { owner: 'alice', upstream: 'tools', session: 'session-1' };
const ANNOUNCEMENTS = 'session:test';

describe('SessionWatch', () => {
  let store: MemoryStore;
  let metrics: GatewayMetrics;
  const watches: SessionWatch[] = [];
  beforeEach(async () => {
    await store?.close();
    store = new MemoryStore({ maxSessions: 100, maxTasks: 100 });
    metrics = createMetrics({ defaultMetrics: false });
  });
  after(async () => {
    for (const watch of watches) watch.close();
    await store?.close();
  });

  const watch = (output: SessionOutput): SessionWatch => {
    const made = new SessionWatch({ store, metrics, logger: pino({ level: 'silent' }) }, KEY, ANNOUNCEMENTS);
    made.add(output);
    watches.push(made);
    return made;
  };
  const output = () => new SessionOutput(createSseTap({ maxEventBytes: 1 << 20, onMessage: async () => undefined }));
  const create = async (overrides: Partial<TaskRecord>): Promise<TaskRecord> => {
    const record = providedRecord({ owner: KEY.owner, upstream: KEY.upstream, upstreamSession: KEY.session, ...overrides });
    assert.equal(await store.createProvidedTask(record, providedState(), 100), 'created');
    await store.events.publish(ANNOUNCEMENTS);
    return record;
  };
  const move = async (record: TaskRecord, status: TaskStatus): Promise<void> => {
    const view = (await store.readProvidedTask(record.handle))!;
    assert.ok(await store.writeProvidedTask(record.handle, view.rev, { status, lastUpdatedAtIso: new Date().toISOString() }, view.state));
    await store.events.publish(record.handle);
  };
  const counted = async (outcome: string) => (await metrics.legacyStatusNotifications.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;

  it('pushes the session\'s own provided tasks, once per status change, and nothing of other sessions or owners', async () => {
    const out = output();
    const pushed: { taskId: string; status: string }[] = [];
    const parser = createParser({ onEvent: ({ data }) => pushed.push((JSON.parse(data) as { params: { taskId: string; status: string } }).params) });
    out.stream.on('data', (chunk: Buffer) => parser.feed(chunk.toString('utf8')));
    watch(out);

    const own = await create({});
    const otherSession = await create({ upstreamSession: 'session-2' });
    const otherOwner = await create({ owner: 'bob' });
    const backendTask = await create({ kind: 'backend' });
    // Discovery (on the announcements) may come before or after these changes: a task found
    // later is read as it is then, and pushed if it moved on from `working`.
    for (const record of [own, otherSession, otherOwner]) await move(record, 'input_required');
    await move(own, 'working');
    await move(own, 'completed');
    await waitFor(() => pushed.some((p) => p.status === 'completed'), 'the completion');

    assert.deepEqual(pushed.map((p) => p.taskId), pushed.map(() => own.handle), 'only the session\'s own task');
    assert.equal(pushed.at(-1)?.status, 'completed');
    assert.ok(pushed.every((p, i) => p.status !== pushed[i - 1]?.status), 'one notification per change');
    assert.equal(await counted('delivered'), pushed.length);
    assert.ok(!pushed.some((p) => p.taskId === backendTask.handle));
  });

  it('drops and counts the notifications of a client that has fallen over the cap behind', async () => {
    const out = output();
    // Nobody reads this stream: fill it to the cap first.
    while (out.write({ jsonrpc: '2.0', method: 'notifications/message', params: { data: 'x'.repeat(500) } }));
    watch(out);
    const task = await create({});
    await move(task, 'completed');
    await waitFor(async () => (await counted('dropped')) === 1, 'the dropped notification to be counted');
    assert.equal(await counted('delivered'), 0);
  });
});
