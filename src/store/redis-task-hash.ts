/**
 * A task record as a Redis hash, one field per property, so that the Lua scripts can read
 * `status` and `expiresAt` directly and an update writes only what changed.
 */
import type { TaskPatch, TaskRecord } from '../task-model/task-record.js';
import { taskKeyTtl } from './redis-keys.js';

type FieldKind = 'string' | 'number' | 'boolean';

/** Every property of a record, with how it is written; a new property fails the typecheck here. */
const FIELDS = {
  handle: 'string',
  kind: 'string',
  owner: 'string',
  upstream: 'string',
  instance: 'string',
  upstreamPath: 'string',
  upstreamTaskId: 'string',
  era: 'string',
  tool: 'string',
  upstreamSession: 'string',
  protocolVersion: 'string',
  createdAt: 'number',
  createdAtIso: 'string',
  lastUpdatedAtIso: 'string',
  ttlMs: 'number',
  expiresAt: 'number',
  pollIntervalMs: 'number',
  status: 'string',
  statusMessage: 'string',
  readOnce: 'boolean',
  traceparent: 'string',
  backgroundCall: 'string',
  creatorIssuer: 'string',
  creatorSubject: 'string',
} as const satisfies Record<keyof TaskRecord, FieldKind>;

/**
 * The properties a patch may change (every TaskPatch property, in the order the opening
 * script returns them): the rest of a record is fixed when the task is created.
 */
export const LIVE_FIELDS = ['status', 'lastUpdatedAtIso', 'ttlMs', 'expiresAt', 'pollIntervalMs', 'statusMessage', 'backgroundCall'] as const satisfies readonly (keyof TaskPatch)[];
/** A TaskPatch property missing from LIVE_FIELDS fails the typecheck here. */
const LIVE_COVERS_PATCH: Exclude<keyof TaskPatch, (typeof LIVE_FIELDS)[number]> extends never ? true : never = true;
void LIVE_COVERS_PATCH;

/** The part of a record that never changes after creation. */
export type FixedFields = Omit<TaskRecord, (typeof LIVE_FIELDS)[number]>;

const LIVE: ReadonlySet<string> = new Set(LIVE_FIELDS);

/** A record's fixed part, frozen: kept and shared by every poll that reads it (redis-poll-opening.ts). */
export function fixedFieldsOf(record: TaskRecord): Readonly<FixedFields> {
  const fixed: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(record)) if (!LIVE.has(field)) fixed[field] = value;
  return Object.freeze(fixed) as unknown as FixedFields;
}

/**
 * A record from its fixed part and the live fields as the opening script returns them,
 * from `at` on in `reply` in LIVE_FIELDS order (null for a property the hash does not hold).
 */
export function withLiveFields(fixed: Readonly<FixedFields>, reply: readonly unknown[], at: number): TaskRecord {
  const record: TaskRecord = {
    ...fixed,
    status: reply[at] as TaskRecord['status'],
    lastUpdatedAtIso: reply[at + 1] as string,
    ttlMs: Number(reply[at + 2]),
    expiresAt: Number(reply[at + 3]),
    pollIntervalMs: Number(reply[at + 4]),
  };
  const statusMessage = reply[at + 5];
  if (typeof statusMessage === 'string') record.statusMessage = statusMessage;
  const backgroundCall = reply[at + 6];
  if (backgroundCall === 'unread' || backgroundCall === 'read') record.backgroundCall = backgroundCall;
  return record;
}

/** The properties an update may remove; the others are never left out of a record. */
const OPTIONAL: ReadonlySet<string> = new Set(['upstreamSession', 'protocolVersion', 'statusMessage'] satisfies (keyof TaskRecord)[]);

function encodeValue(value: unknown): string {
  if (typeof value === 'boolean') return value ? '1' : '0';
  return String(value);
}

/** Field/value pairs, flat, as HSET takes them. */
export function encodeTask(record: TaskRecord): string[] {
  const pairs: string[] = [];
  for (const [field, value] of Object.entries(record)) {
    if (value !== undefined && field in FIELDS) pairs.push(field, encodeValue(value));
  }
  return pairs;
}

/** What an update sets (flat pairs) and what it removes (a property patched to undefined). */
export function encodePatch(patch: TaskPatch): { set: string[]; remove: string[] } {
  const set: string[] = [];
  const remove: string[] = [];
  for (const [field, value] of Object.entries(patch)) {
    if (value !== undefined) set.push(field, encodeValue(value));
    else if (OPTIONAL.has(field)) remove.push(field);
  }
  return { set, remove };
}

/** ARGV of an update as patch_task reads it (redis-scripts.ts). */
export function patchArgs(patch: TaskPatch, now: number): string[] {
  const { set, remove } = encodePatch(patch);
  const newTtl = patch.expiresAt === undefined ? '' : String(taskKeyTtl(patch.expiresAt, now));
  return [newTtl, String(set.length), ...set, ...remove];
}

/** A record from HGETALL (or a flat field/value list); undefined when there is none. */
export function decodeTask(fields: Record<string, string> | readonly string[]): TaskRecord | undefined {
  const entries = Array.isArray(fields) ? pairsOf(fields) : Object.entries(fields);
  if (entries.length === 0) return undefined;
  const record: Record<string, unknown> = {};
  for (const [field, value] of entries) {
    const kind = (FIELDS as Record<string, FieldKind | undefined>)[field];
    if (kind === 'number') record[field] = Number(value);
    else if (kind === 'boolean') record[field] = value === '1';
    else if (kind === 'string') record[field] = value;
  }
  if (typeof record.handle !== 'string') return undefined;
  // Records written before tasks had a kind were all taken over from a backend.
  record.kind ??= 'backend';
  return record as unknown as TaskRecord;
}

function pairsOf(flat: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i]!, flat[i + 1]!]);
  return pairs;
}
