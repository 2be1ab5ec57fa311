/**
 * A live task as the console's API shows it (docs/console.md, "Task"): named by the audit
 * trail's hash of its handle, never the handle; no result, no input, no backend task id, no
 * session id. What the record says of its creator follows console.principals. Filters and
 * sorting are applied here, on the records one scan read.
 */
import type { ConsoleConfig } from '../config/sections/console.js';
import type { HandleHasher } from '../observability/handle-hash.js';
import { sanitizeStatusMessage } from '../task-model/status-message.js';
import type { TaskRecord, TaskStatus } from '../task-model/task-record.js';

/** statusMessage as shown: the recorded (already sanitised) text, cut shorter for a table. */
const MESSAGE_CHARS = 256;

export interface PrincipalView {
  /** The principal key tasks are owned by (the `owner` of the general log's lines). */
  readonly key: string;
  readonly issuer?: string;
  /** Only with console.principals: shown, and only for tasks created since. */
  readonly subject?: string;
}

export interface TaskRow {
  readonly id: string;
  readonly principal: PrincipalView;
  readonly tool: string;
  readonly upstream: string;
  readonly instance: string;
  /**
   * backend: the backend's task, taken over; gateway: a task the gateway runs itself
   * (provided); background: a gateway-run task of a client that knows no tasks (src/background/).
   */
  readonly kind: 'backend' | 'gateway' | 'background';
  /** The protocol generation of the task: legacy (2025-11-25), modern (2026-07-28). */
  readonly era: TaskRecord['era'];
  /**
   * The generation its client speaks and the one its backend speaks, shown apart. Today both
   * are the record's era: a task is served in the era it was created in, on both sides.
   */
  readonly clientEra: TaskRecord['era'];
  readonly backendEra: TaskRecord['era'];
  readonly status: TaskStatus;
  readonly statusMessage?: string;
  readonly createdAt: string;
  readonly lastUpdatedAt: string;
  readonly ageMs: number;
  readonly ttlMs: number;
  readonly ttlLeftMs: number;
  readonly pollIntervalMs: number;
  readonly readOnce: boolean;
}

export function principalOf(record: TaskRecord, policy: ConsoleConfig): PrincipalView {
  return {
    key: record.owner,
    ...(record.creatorIssuer === undefined ? {} : { issuer: record.creatorIssuer }),
    ...(policy.principals === 'shown' && record.creatorSubject !== undefined ? { subject: record.creatorSubject } : {}),
  };
}

export function taskRow(record: TaskRecord, hashHandle: HandleHasher, policy: ConsoleConfig, now: number): TaskRow {
  return {
    id: hashHandle(record.handle),
    principal: principalOf(record, policy),
    tool: record.tool,
    upstream: record.upstream,
    instance: record.instance,
    kind: record.kind !== 'provided' ? 'backend' : record.backgroundCall === undefined ? 'gateway' : 'background',
    era: record.era,
    clientEra: record.era,
    backendEra: record.era,
    status: record.status,
    ...(record.statusMessage === undefined ? {} : { statusMessage: sanitizeStatusMessage(record.statusMessage, MESSAGE_CHARS) }),
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: isoOrCreation(record),
    ageMs: Math.max(0, now - record.createdAt),
    ttlMs: record.ttlMs,
    ttlLeftMs: Math.max(0, record.expiresAt - now),
    pollIntervalMs: record.pollIntervalMs,
    readOnce: record.readOnce,
  };
}

/** The backend's own timestamp text is shown only when it is one. */
function isoOrCreation(record: TaskRecord): string {
  const parsed = Date.parse(record.lastUpdatedAtIso);
  return new Date(Number.isNaN(parsed) ? record.createdAt : parsed).toISOString();
}

export const SORT_KEYS = ['age', 'ttlLeft', 'status', 'tool', 'upstream', 'principal', 'kind', 'lastUpdated'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export interface TaskQuery {
  /** A principal key, or text found in its subject or issuer. */
  readonly principal?: string;
  readonly upstream?: string;
  readonly tool?: string;
  readonly statuses?: readonly TaskStatus[];
  readonly kind?: TaskRow['kind'];
  readonly sort: SortKey;
  readonly order: 'asc' | 'desc';
}

export function matches(row: TaskRow, query: TaskQuery): boolean {
  if (query.upstream !== undefined && row.upstream !== query.upstream) return false;
  if (query.tool !== undefined && row.tool !== query.tool) return false;
  if (query.kind !== undefined && row.kind !== query.kind) return false;
  if (query.statuses !== undefined && !query.statuses.includes(row.status)) return false;
  if (query.principal !== undefined) {
    const p = row.principal;
    const wanted = query.principal.toLowerCase();
    const found = p.key === query.principal || (p.subject?.toLowerCase().includes(wanted) ?? false) || (p.issuer?.toLowerCase().includes(wanted) ?? false);
    if (!found) return false;
  }
  return true;
}

const STATUS_ORDER: Record<TaskStatus, number> = { input_required: 0, working: 1, failed: 2, cancelled: 3, completed: 4 };

function sortValue(row: TaskRow, key: SortKey): number | string {
  switch (key) {
    case 'age':
      return row.ageMs;
    case 'ttlLeft':
      return row.ttlLeftMs;
    case 'status':
      return STATUS_ORDER[row.status];
    case 'tool':
      return row.tool;
    case 'upstream':
      return row.upstream;
    case 'principal':
      return row.principal.subject ?? row.principal.key;
    case 'kind':
      return row.kind;
    case 'lastUpdated':
      return row.lastUpdatedAt;
  }
}

/** Sorted in place; ties keep the id order, so pages of one listing are stable. */
export function sortRows(rows: TaskRow[], key: SortKey, order: 'asc' | 'desc'): TaskRow[] {
  const sign = order === 'asc' ? 1 : -1;
  return rows.sort((a, b) => {
    const x = sortValue(a, key);
    const y = sortValue(b, key);
    if (x !== y) return (x < y ? -1 : 1) * sign;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}

/** How many of `rows` there are per value of `pick`: the filter choices and the summary. */
export function countBy(rows: readonly TaskRow[], pick: (row: TaskRow) => string): Record<string, number> {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(pick(row), (counts.get(pick(row)) ?? 0) + 1);
  // fromEntries defines own properties: a tool named __proto__ is a count like any other.
  return Object.fromEntries(counts);
}
