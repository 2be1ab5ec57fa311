/**
 * The one builder of a new task record (task-record.ts), for every room that makes a task: a
 * backend's creation result taken over (src/tasks/task-creation.ts), a call the gateway runs
 * as a task (src/provided/creation.ts), a task bridged across the eras (src/bridge/). What the
 * record derives from the policy (the poll interval told the client, read-once, the recorded
 * status message, the expiry) is derived here, the same way for all of them; the lifetime
 * comes in already held to the TTL policy (ttl-policy.ts).
 */
import type { TasksConfig } from '../config/sections/tasks.js';
import { enforcedInterval } from './poll-rule.js';
import { recordedStatusMessage } from './status-message.js';
import type { TaskRecord, TaskStatus } from './task-record.js';
import { wholeTtlMs } from './task-wire.js';

export type RecordPolicy = Pick<TasksConfig, 'poll' | 'tools' | 'statusMessageMaxLength'>;

/**
 * What the room making a task knows of it; the rest of the record follows from the policy.
 * Times the backend gave none of are the gateway's clock.
 */
export interface NewTask
  extends Pick<TaskRecord, 'handle' | 'kind' | 'owner' | 'upstream' | 'instance' | 'upstreamPath' | 'era' | 'tool'>,
    Partial<Pick<TaskRecord, 'upstreamSession' | 'protocolVersion' | 'createdAtIso' | 'lastUpdatedAtIso' | 'traceparent' | 'creatorIssuer' | 'creatorSubject'>> {
  /** The backend's id of the task; a task no backend holds is named by its handle on both sides. */
  readonly upstreamTaskId?: string;
  /** The lifetime, already within the TTL policy. */
  readonly ttlMs: number;
  /** The interval the backend asked for, if any: held to the policy's floor, or its default when unsaid. */
  readonly pollIntervalMs?: number;
  /** `working` unless the backend said otherwise. */
  readonly status?: TaskStatus;
  /** The backend's status message as it wrote it; the record keeps it sanitised (status-message.ts). */
  readonly statusMessage?: string;
  /** A background call (src/background/): unread until its outcome was first delivered. */
  readonly backgroundCall?: boolean;
}

export function buildTaskRecord(task: NewTask, policy: RecordPolicy, now = Date.now()): TaskRecord {
  const ttlMs = wholeTtlMs(task.ttlMs);
  const createdAtIso = task.createdAtIso ?? new Date(now).toISOString();
  const upstreamTaskId = task.upstreamTaskId ?? task.handle;
  // Optional fields only when set: the record reads back from either store as it was written.
  return {
    handle: task.handle,
    kind: task.kind,
    owner: task.owner,
    upstream: task.upstream,
    instance: task.instance,
    upstreamPath: task.upstreamPath,
    upstreamTaskId,
    era: task.era,
    tool: task.tool,
    ...defined('upstreamSession', task.upstreamSession),
    ...defined('protocolVersion', task.protocolVersion),
    createdAt: now,
    createdAtIso,
    lastUpdatedAtIso: task.lastUpdatedAtIso ?? createdAtIso,
    ttlMs,
    expiresAt: now + ttlMs,
    pollIntervalMs: enforcedInterval(task.pollIntervalMs, policy.poll.floor, policy.poll.default),
    status: task.status ?? 'working',
    ...defined('statusMessage', recordedStatusMessage(task.statusMessage, policy.statusMessageMaxLength, { handle: task.handle, upstreamTaskId })),
    readOnce: policy.tools[task.tool]?.readOnce ?? false,
    ...defined('traceparent', task.traceparent),
    ...(task.backgroundCall ? { backgroundCall: 'unread' as const } : undefined),
    ...defined('creatorIssuer', task.creatorIssuer),
    ...defined('creatorSubject', task.creatorSubject),
  };
}

function defined<K extends string, V>(key: K, value: V | undefined): { [P in K]: V } | undefined {
  return value === undefined ? undefined : ({ [key]: value } as { [P in K]: V });
}
