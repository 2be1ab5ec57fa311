/**
 * Observability: a scripted scenario (creations, a forwarded and two early polls, a foreign
 * lookup burst, a cancel) and the exact metrics and audit events it must leave; no raw handle
 * or token in the general log.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { modernClient, startTaskStack, type TaskStack } from './support/task-harness.js';
import type { ModernTaskClient } from './support/modern-client.js';

function captureLines(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { stream, lines };
}

/** The value of one series in a Prometheus text exposition. */
function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('task metrics, audit trail and detectors', () => {
  let stack: TaskStack;
  let alice: ModernTaskClient;
  let mallory: ModernTaskClient;
  const general = captureLines();
  const audit = captureLines();
  const handles: string[] = [];
  const tokens: string[] = [];

  before(async () => {
    stack = await startTaskStack({
      era: 'modern',
      pollIntervalMs: 5000,
      policy: { audit: { enumeration: { threshold: 3, window: '1m' } } },
      gatewayDeps: { logger: pino({ level: 'info' }, general.stream), auditDestination: audit.stream },
    });
    alice = await modernClient(stack, 'alice');
    mallory = await modernClient(stack, 'mallory');
    tokens.push((await stack.bearer('alice')).slice(7), (await stack.bearer('mallory')).slice(7));
    for (let i = 0; i < 2; i++) {
      const created = await alice.raw('tools/call', { name: 'slow_scan', arguments: { seconds: 30 } });
      handles.push(String(created.response?.result?.taskId));
    }
    for (let i = 0; i < 3; i++) await alice.raw('tasks/get', { taskId: handles[0]! });
    for (let i = 0; i < 3; i++) await mallory.raw('tasks/get', { taskId: handles[0]! });
    await alice.raw('tasks/cancel', { taskId: handles[1]! });
    await new Promise((r) => setTimeout(r, 100)); // the last onResponse hooks
  });
  after(async () => {
    await alice?.close();
    await mallory?.close();
    await stack?.close();
  });

  it('counts exactly what happened', async () => {
    const metrics = await (await fetch(`${stack.gw.adminUrl}/metrics`)).text();
    const expected: Record<string, number> = {
      'taskgate_tasks_created_total{upstream="tools",tool="slow_scan"}': 2,
      'taskgate_tasks_live{status="working"}': 2,
      'taskgate_polls_total{outcome="forwarded"}': 1,
      'taskgate_polls_total{outcome="cached"}': 2,
      'taskgate_task_operations_total{method="tasks/get",outcome="allowed"}': 3,
      'taskgate_task_operations_total{method="tasks/get",outcome="denied"}': 3,
      'taskgate_task_operations_total{method="tasks/cancel",outcome="allowed"}': 1,
      'taskgate_detector_events_total{detector="enumeration"}': 1,
    };
    for (const [series, value] of Object.entries(expected)) assert.equal(sample(metrics, series), value, series);
    assert.equal(sample(metrics, 'taskgate_polls_total{outcome="rejected"}'), undefined);
    assert.ok((sample(metrics, 'taskgate_store_operation_seconds_count{operation="createTask"}') ?? 0) >= 2);
    assert.ok((sample(metrics, 'taskgate_jwt_verifications_total{outcome="ok"}') ?? 0) >= 2);
  });

  it('writes one audit event per task operation, with the raw handle and the principal', () => {
    const events = audit.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const summary = events.map((e) => [e.event, e.allowed, e.reason ?? null, e.handle, (e.principal as { subject: string }).subject]);
    const [h0, h1] = handles;
    assert.deepEqual(summary, [
      ['created', true, null, h0, 'alice'],
      ['created', true, null, h1, 'alice'],
      ['get', true, null, h0, 'alice'],
      ['get', true, null, h0, 'alice'],
      ['get', true, null, h0, 'alice'],
      ['denied', false, 'denied', h0, 'mallory'],
      ['denied', false, 'denied', h0, 'mallory'],
      ['denied', false, 'denied', h0, 'mallory'],
      ['cancel', true, null, h1, 'alice'],
    ]);
    for (const e of events) {
      assert.equal(e.log, 'audit');
      assert.equal(e.upstream, 'tools');
      assert.equal(e.source, '127.0.0.1');
      assert.equal(typeof e.requestId, 'string');
      assert.equal(typeof e.time, 'string');
      assert.equal(typeof e.handleHash, 'string');
      assert.equal((e.principal as { issuer: string }).issuer, stack.jwks.issuer);
    }
    assert.equal(events[2]!.status, 'working');
    assert.equal(events[0]!.tool, 'slow_scan');
  });

  it('keeps raw handles and tokens out of the general log, which carries their hash instead', () => {
    assert.ok(general.lines.length > 10);
    for (const line of general.lines) {
      for (const secret of [...handles, ...tokens]) assert.ok(!line.includes(secret), `general log leaked a secret: ${line}`);
    }
    const hashes = new Set(audit.lines.map((l) => (JSON.parse(l) as { handleHash: string }).handleHash));
    const logged = general.lines.map((l) => (JSON.parse(l) as { task?: string }).task).filter(Boolean);
    assert.ok(logged.length >= 9 && logged.every((h) => hashes.has(h!)), 'general log lines carry the audit trail\'s hashes');
    const warning = general.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.detector === 'enumeration');
    assert.ok(warning, 'the enumeration detector logged a warning');
    assert.equal(warning.level, 40);
  });
});
