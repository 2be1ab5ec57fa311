/**
 * The one builder of a new task record (src/task-model/record-builder.ts): what every room that
 * makes a task gets from it, the same way.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tasksSchema } from '../../../src/config/sections/tasks.js';
import { buildTaskRecord, type NewTask } from '../../../src/task-model/record-builder.js';
import { mintHandle } from '../../../src/tasks/handle.js';

const POLICY = tasksSchema.parse({ poll: { floor: '1s', default: '5s' }, statusMessageMaxLength: 20, tools: { once: { readOnce: true } } });
const NOW = 1_700_000_000_000;

function spec(overrides: Partial<NewTask> = {}): NewTask {
  return { handle: mintHandle(), kind: 'provided', owner: 'owner-a', upstream: 'tools', instance: 'http://127.0.0.1:3000', upstreamPath: '/mcp', era: 'legacy', tool: 'scan', ttlMs: 60_000, ...overrides };
}

describe('buildTaskRecord', () => {
  it('a task no backend holds: named by its handle, working, its times the gateway\'s, the policy\'s interval', () => {
    const task = spec();
    const iso = new Date(NOW).toISOString();
    assert.deepEqual(buildTaskRecord(task, POLICY, NOW), {
      handle: task.handle,
      kind: 'provided',
      owner: 'owner-a',
      upstream: 'tools',
      instance: 'http://127.0.0.1:3000',
      upstreamPath: '/mcp',
      upstreamTaskId: task.handle,
      era: 'legacy',
      tool: 'scan',
      createdAt: NOW,
      createdAtIso: iso,
      lastUpdatedAtIso: iso,
      ttlMs: 60_000,
      expiresAt: NOW + 60_000,
      pollIntervalMs: 5000,
      status: 'working',
      readOnce: false,
    }, 'optional fields the room did not set are absent, not undefined');
  });

  it('a backend\'s task: its id, status, timestamps and interval (held to the floor), its status message kept safe', () => {
    const handle = mintHandle();
    const record = buildTaskRecord(
      spec({ handle, kind: 'backend', upstreamTaskId: 'job-7', status: 'input_required', pollIntervalMs: 10, createdAtIso: 'c', statusMessage: 'job-7\u202E waits\nfor you, a long while', upstreamSession: 's1', protocolVersion: '2025-11-25' }),
      POLICY,
      NOW,
    );
    assert.equal(record.upstreamTaskId, 'job-7');
    assert.equal(record.status, 'input_required');
    assert.equal(record.pollIntervalMs, 1000, 'never sooner than the floor');
    assert.deepEqual([record.createdAtIso, record.lastUpdatedAtIso], ['c', 'c'], 'last updated: when created, unless said');
    assert.equal(record.statusMessage, `${handle} waits for you, a long while`.slice(0, 20), 'one line, no controls, the handle for the backend id, cut to the policy');
    assert.deepEqual([record.upstreamSession, record.protocolVersion], ['s1', '2025-11-25']);
    assert.equal(buildTaskRecord(spec({ pollIntervalMs: 7000, lastUpdatedAtIso: 'l' }), POLICY, NOW).lastUpdatedAtIso, 'l');
    assert.equal(buildTaskRecord(spec({ pollIntervalMs: 7000 }), POLICY, NOW).pollIntervalMs, 7000);
  });

  it('derives read-once from the tool\'s policy, a background call\'s mark, the trace link and the creator', () => {
    assert.equal(buildTaskRecord(spec({ tool: 'once' }), POLICY, NOW).readOnce, true);
    const record = buildTaskRecord(spec({ backgroundCall: true, traceparent: '00-abc-def-01', creatorIssuer: 'https://issuer', creatorSubject: 'alice' }), POLICY, NOW);
    assert.equal(record.backgroundCall, 'unread');
    assert.equal(record.traceparent, '00-abc-def-01');
    assert.deepEqual([record.creatorIssuer, record.creatorSubject], ['https://issuer', 'alice']);
    assert.equal('backgroundCall' in buildTaskRecord(spec({ backgroundCall: false }), POLICY, NOW), false);
  });

  it('keeps the lifetime and the expiry in whole milliseconds', () => {
    const record = buildTaskRecord(spec({ ttlMs: 1500.9 }), POLICY, NOW);
    assert.deepEqual([record.ttlMs, record.expiresAt], [1500, NOW + 1500]);
  });
});
