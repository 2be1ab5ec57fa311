/**
 * The 2025-11-25 tasks/list, answered by the gateway from its own records: the scope filter
 * (owner, and the era and upstream a handle can reach) is part of the store query, and the
 * cursor is the gateway's own. A modern task has no place in a legacy list: its object has other
 * fields (ttlMs, not ttl) and its handle cannot be used on a legacy request anyway. A cursor only says where the
 * previous page ended; tampering with it cannot reach anyone else's tasks, because the owner
 * comes from the verified principal, never from the cursor.
 */
import { GatewayError } from '../errors.js';
import type { TaskListPosition } from '../store/store.js';
import type { TaskScope } from '../task-model/task-record.js';
import type { TaskDeps } from './task-context.js';
import { taskFromRecord } from '../task-model/task-wire.js';

export async function listOwnTasks(deps: TaskDeps, scope: TaskScope, cursor: unknown): Promise<Record<string, unknown>> {
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  const pageSize = deps.policy.listPageSize;
  const records = await deps.store.listTasks(scope, after, pageSize + 1);
  const page = records.slice(0, pageSize);
  const result: Record<string, unknown> = { tasks: page.map(taskFromRecord) };
  const last = page.at(-1);
  if (records.length > pageSize && last) result.nextCursor = encodeCursor({ createdAt: last.createdAt, handle: last.handle });
  return result;
}

export function encodeCursor(position: TaskListPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.handle])).toString('base64url');
}

export function decodeCursor(cursor: unknown): TaskListPosition {
  if (typeof cursor !== 'string' || cursor.length > 200) throw new GatewayError('TG_ERR_INVALID_CURSOR');
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string') {
      return { createdAt: value[0] as number, handle: value[1] as string };
    }
  } catch {
    // fall through: not a cursor this gateway wrote
  }
  throw new GatewayError('TG_ERR_INVALID_CURSOR');
}
