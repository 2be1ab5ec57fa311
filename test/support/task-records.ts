/**
 * Task records for tests, built once: a backend task of the legacy era with every field set
 * (owner-a's, on upstream `tools`), a task the gateway runs itself, and its provided state.
 * `overrides` change any field. The store contract, and the unit tests of the rooms that
 * read records, build theirs here.
 */
import { mintHandle } from '../../src/tasks/handle.js';
import type { ProvidedState } from '../../src/task-model/provided-state.js';
import type { TaskRecord, TaskScope } from '../../src/task-model/task-record.js';

export function taskRecord(overrides: Partial<TaskRecord> = {}): TaskRecord {
  const now = Date.now();
  return {
    handle: mintHandle(),
    kind: 'backend',
    owner: 'owner-a',
    upstream: 'tools',
    instance: 'http://127.0.0.1:3000',
    upstreamPath: '/mcp',
    upstreamTaskId: `up-${Math.random().toString(36).slice(2)}`,
    era: 'legacy',
    tool: 'slow_scan',
    upstreamSession: 'session-1',
    protocolVersion: '2025-11-25',
    createdAt: now,
    createdAtIso: new Date(now).toISOString(),
    lastUpdatedAtIso: new Date(now).toISOString(),
    ttlMs: 60_000,
    expiresAt: now + 60_000,
    pollIntervalMs: 1000,
    status: 'working',
    readOnce: false,
    ...overrides,
  };
}

/** The scope of taskRecord()'s defaults. */
export const OWNER_A: TaskScope = { owner: 'owner-a', era: 'legacy', upstream: 'tools' };

/** The scope that reaches `record`: its owner, era and upstream. */
export function scopeOf(record: TaskRecord): TaskScope {
  return { owner: record.owner, era: record.era, upstream: record.upstream };
}

/** A task the gateway runs itself (src/provided/). */
export function providedRecord(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return taskRecord({ kind: 'provided', upstreamTaskId: `call-${Math.random().toString(36).slice(2)}`, ...overrides });
}

export function providedState(overrides: Partial<ProvidedState> = {}): ProvidedState {
  return {
    call: { params: { name: 'slow_scan', arguments: { depth: 3 } }, headers: { 'mcp-protocol-version': '2025-11-25' } },
    instance: 'http://127.0.0.1:3000',
    callId: 'tg-call-1',
    round: 0,
    ...overrides,
  };
}
