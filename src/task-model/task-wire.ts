/**
 * The task wire of each era, as one strategy object per era (EraWire), the era decided once
 * (the MCP SDK's protocolEras.ts is the model): the mcp stage decides a request's era, the
 * pipeline hands the tasks stage and the capabilities that era's EraWire (TaskRequest.wire),
 * and a record's wire is the one of the era it was created in (wireOf(record.era)). Code above
 * asks the wire what the era does instead of branching on its name.
 *
 * The two eras (docs/architecture.md, "Eras"):
 *   legacy  MCP 2025-11-25 and earlier: sessions; a task object
 *           { taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttl, pollInterval? },
 *           nested in a creation result as { task: {…} }
 *   modern  MCP 2026-07-28 with the tasks extension: no sessions; the same object with ttlMs and
 *           pollIntervalMs, flat, with resultType "task" on creation and "complete" on tasks/get
 * (PROTOCOL-BRIEF §2.4, §5.2). Reading is lenient about what the gateway does not need;
 * presenting rewrites exactly the fields the gateway owns (id, lifetime, poll interval, status
 * message), hides the backend id in the rest (backend-ids.ts), and keeps it.
 *
 * ext-tasks since e4345978 (docs/architecture.md, "Protocol revisions"): ttlMs and
 * pollIntervalMs are integers, a failed task's `error` is a JSON-RPC error object, and every
 * task-shaped result carries its resultType. The legacy schema has integer ttl and
 * pollInterval too. What a backend sends otherwise is made so here, on the way in and out.
 */
import type { Era } from '../mcp/era-name.js';
import { declaresTasksExtension, isModernVersion } from '../mcp/era.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import { hideBackendId } from './backend-ids.js';
import type { ProvidedTaskView } from './provided-state.js';
import { isTaskStatus, type TaskRecord, type TaskStatus } from './task-record.js';

/** A task object as read from a backend's answer, in either era. */
export interface TaskFields {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt?: string;
  lastUpdatedAt?: string;
  /** null: the backend keeps it forever; undefined: not said. */
  ttlMs?: number | null;
  pollIntervalMs?: number;
}

/** How tasks are spoken in one era: its task objects, its methods and what they answer. */
export interface EraWire {
  readonly era: Era;
  /** The protocol revision that names the era where people read it (metrics labels, logs). */
  readonly revision: '2025-11-25' | '2026-07-28';
  /**
   * Whether the era has sessions: initialize, Mcp-Session-Id, GET streams, and a backend's
   * requests to the client (elicitation, sampling) on its streams (legacy). Modern requests
   * stand alone: no session, no GET stream, no server→client requests.
   */
  readonly sessions: boolean;
  /**
   * Who starts a task. `client` (legacy): the client asks with `params.task`, so its creation
   * is counted and its lifetime capped before the backend works, and a creation the gateway
   * refuses is an error. `server` (modern): the server decides, for a request that declared the
   * tasks extension; the creation is counted when it comes back, and a call that cannot become
   * a task stays a plain call.
   */
  readonly taskStart: 'client' | 'server';
  /**
   * Where a server says it runs tasks: per tool in tools/list (`execution.taskSupport`) and
   * `capabilities.tasks` in initialize (legacy), or the tasks extension in server/discover (modern).
   */
  readonly taskSupport: 'per-tool' | 'extension';
  /**
   * How a running task asks its client for input: the backend's requests relayed on the
   * client's tasks/result stream (legacy), or `inputRequests` in the task, answered by
   * tasks/update, and MRTR's input_required result for a plain call (modern).
   */
  readonly input: 'server-requests' | 'input-requests';
  /**
   * Whether a client's hang-up (its request's stream closed) cancels the call: modern, as its
   * transport says; a legacy backend runs on (streams may be resumed), so the gateway waits for
   * its answer before it gives back the call's concurrency slot (src/limits/call-hold.ts).
   */
  readonly hangUpCancels: boolean;
  /** Whether tasks/get carries the result inline once the task ended (modern); legacy has tasks/result for it. */
  readonly resultInline: boolean;
  /**
   * What tasks/cancel answers: the task, already `cancelled`, and -32602 for a task that had
   * ended (legacy); an empty ack whatever the task's state (modern).
   */
  readonly cancelAnswer: 'task' | 'ack';
  /** A tool result with `isError: true` ends its task `failed` (legacy) or `completed` (modern) (PROTOCOL-BRIEF §8.10). */
  readonly toolErrorStatus: 'failed' | 'completed';
  /**
   * A tasks/* method the era lacks: `refused` -32601 by the gateway (modern: tasks/result and
   * tasks/list, DESIGN.md §3); `forwarded` (legacy: tasks/update is no method of the era at
   * all, and the backend answers it as it answers any method it does not know).
   */
  readonly missingTaskMethod: 'refused' | 'forwarded';
  /** The notification that carries a task's status. */
  readonly statusNotification: 'notifications/tasks/status' | 'notifications/tasks';
  /** The lifetime and poll-interval fields of a task object. */
  readonly ttlField: 'ttl' | 'ttlMs';
  readonly pollIntervalField: 'pollInterval' | 'pollIntervalMs';
  /** Whether `method` is one of the era's tasks/* methods. */
  hasTaskMethod(method: string): boolean;
  /** Whether a tasks/* request may use tasks: modern asks each request to declare the extension; legacy negotiated it with the session. */
  declaresTasks(message: JsonRpcRequest): boolean;
  /** Whether a tools/call could become a task: legacy, it asks for one; modern, it declared the extension. */
  asksForTask(message: JsonRpcRequest): boolean;
  /** A task object of this era; undefined when `value` is none. */
  readTask(value: unknown): TaskFields | undefined;
  /** The task object inside a creation result, or undefined when the result created no task. */
  creationTaskObject(result: unknown): JsonObject | undefined;
  /** A creation result around a task object. */
  creationResult(task: JsonObject): JsonObject;
  /** A result the gateway makes, in the era's shape (modern: resultType "complete" first, unless the result says its own). */
  completeResult(result: JsonObject): JsonObject;
  /** A tasks/get, tasks/update or tasks/cancel result made the era's standard shape in place (modern: resultType "complete", whatever was there). */
  markComplete(result: JsonObject): void;
  /**
   * What tasks/get answers from the record alone (an early poll with no answer held, a task the
   * gateway runs). Undefined when the era wants more than a record holds: a modern task that
   * ended or waits for input carries its result, error or inputRequests.
   */
  recordAnswer(record: TaskRecord): JsonObject | undefined;
  /** The headers that take a task request to the backend's task: legacy, its session (null: none); modern, Mcp-Name. */
  taskRouteHeaders(record: Pick<TaskRecord, 'upstreamTaskId' | 'upstreamSession'>): Record<string, string | null>;
  /** The era's own shaping of a DetailedTask (a tasks/get answer, a status notification) about to be shown. */
  shapeDetailedTask(task: JsonObject, status: TaskStatus): void;
}

const LEGACY_TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']);
const MODERN_TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

export const LEGACY_WIRE: EraWire = {
  era: 'legacy',
  revision: '2025-11-25',
  sessions: true,
  taskStart: 'client',
  taskSupport: 'per-tool',
  input: 'server-requests',
  hangUpCancels: false,
  resultInline: false,
  cancelAnswer: 'task',
  toolErrorStatus: 'failed',
  missingTaskMethod: 'forwarded',
  statusNotification: 'notifications/tasks/status',
  ttlField: 'ttl',
  pollIntervalField: 'pollInterval',
  hasTaskMethod: (method) => LEGACY_TASK_METHODS.has(method),
  declaresTasks: () => true,
  asksForTask: (message) => isObject(message.params) && isObject(message.params.task),
  readTask: (value) => readTaskFields(value, LEGACY_WIRE),
  creationTaskObject: (result) => (isObject(result) && isObject(result.task) && typeof result.task.taskId === 'string' ? result.task : undefined),
  creationResult: (task) => ({ task }),
  completeResult: (result) => result,
  markComplete: () => undefined,
  recordAnswer: (record) => taskFromRecord(record),
  taskRouteHeaders: (record) => ({ 'mcp-session-id': record.upstreamSession ?? null }),
  shapeDetailedTask: () => undefined,
};

export const MODERN_WIRE: EraWire = {
  era: 'modern',
  revision: '2026-07-28',
  sessions: false,
  taskStart: 'server',
  taskSupport: 'extension',
  input: 'input-requests',
  hangUpCancels: true,
  resultInline: true,
  cancelAnswer: 'ack',
  toolErrorStatus: 'completed',
  missingTaskMethod: 'refused',
  statusNotification: 'notifications/tasks',
  ttlField: 'ttlMs',
  pollIntervalField: 'pollIntervalMs',
  hasTaskMethod: (method) => MODERN_TASK_METHODS.has(method),
  declaresTasks: (message) => declaresTasksExtension(message),
  asksForTask: (message) => declaresTasksExtension(message),
  readTask: (value) => readTaskFields(value, MODERN_WIRE),
  creationTaskObject: (result) => (isObject(result) && result.resultType === 'task' && typeof result.taskId === 'string' ? result : undefined),
  creationResult: (task) => ({ resultType: 'task', ...task }),
  completeResult: (result) => ({ resultType: 'complete', ...result }),
  markComplete: (result) => {
    result.resultType = 'complete';
  },
  recordAnswer: (record) => (record.status === 'working' || record.status === 'cancelled' ? { ...taskFromRecord(record), resultType: 'complete' } : undefined),
  taskRouteHeaders: (record) => ({ 'mcp-name': record.upstreamTaskId }),
  // ext-tasks rejects a failed task without a JSON-RPC error object, and an inline result
  // without its own resultType (WIRE-NOTES).
  shapeDetailedTask: (task, status) => {
    if (status === 'failed' || task.error !== undefined) task.error = jsonRpcErrorOf(task.error);
    if (isObject(task.result)) task.result.resultType ??= 'complete';
  },
};

const WIRES: Readonly<Record<Era, EraWire>> = { legacy: LEGACY_WIRE, modern: MODERN_WIRE };

/** The wire of an era: of a request (decided by the mcp stage), or of a record (the era it was created in). */
export function wireOf(era: Era): EraWire {
  return WIRES[era];
}

/**
 * The wire the task's backend speaks. A bridged task's backend is of the other era than its
 * client (src/bridge/), and its record keeps the backend's protocol version; every other task
 * lives at its backend in its own era.
 */
export function backendWireOf(record: Pick<TaskRecord, 'kind' | 'era' | 'protocolVersion'>): EraWire {
  if (record.kind !== 'bridged') return WIRES[record.era];
  return isModernVersion(record.protocolVersion) ? MODERN_WIRE : LEGACY_WIRE;
}

/** The wire whose status notification `method` is; undefined for any other method. */
export function wireOfStatusNotification(method: string): EraWire | undefined {
  return Object.values(WIRES).find((wire) => wire.statusNotification === method);
}

/** A lifetime in whole milliseconds, rounded down: the gateway never promises more than was said. */
export function wholeTtlMs(ms: number): number {
  return Math.min(Math.floor(ms), Number.MAX_SAFE_INTEGER);
}

/** A poll interval in whole milliseconds, rounded up: a client is never asked to poll sooner than the backend asked. */
export function wholeIntervalMs(ms: number): number {
  return Math.min(Math.ceil(ms), Number.MAX_SAFE_INTEGER);
}

/**
 * Rewrites a task object in place for its owner: the handle for the backend id, the
 * effective lifetime and poll interval, and the status message as the record keeps it
 * (sanitised once, when the record was written: status-message.ts). `record` is the task as
 * it stands after learning from this very object, so the two say the same.
 */
export function presentTask(task: JsonObject, record: TaskRecord): void {
  const wire = WIRES[record.era];
  task.taskId = record.handle;
  task[wire.ttlField] = wholeTtlMs(record.ttlMs);
  task[wire.pollIntervalField] = wholeIntervalMs(record.pollIntervalMs);
  if (record.statusMessage === undefined) delete task.statusMessage;
  else task.statusMessage = record.statusMessage;
  hideBackendId(task, record, 'task');
}

/** presentTask for a DetailedTask (a tasks/get answer, a status notification): also the inline parts the era shapes. */
export function presentDetailedTask(task: JsonObject, record: TaskRecord): void {
  WIRES[record.era].shapeDetailedTask(task, record.status);
  presentTask(task, record);
}

/** A task object built from the record alone (tasks/list items; answers for early polls). */
export function taskFromRecord(record: TaskRecord): JsonObject {
  const wire = WIRES[record.era];
  const task: JsonObject = {
    taskId: record.handle,
    status: record.status,
    createdAt: record.createdAtIso,
    lastUpdatedAt: record.lastUpdatedAtIso,
    [wire.ttlField]: wholeTtlMs(record.ttlMs),
    [wire.pollIntervalField]: wholeIntervalMs(record.pollIntervalMs),
  };
  if (record.statusMessage !== undefined) task.statusMessage = record.statusMessage;
  return task;
}

/** The modern DetailedTask of a task the gateway runs: the task, and whatever it holds for the client in its status. */
export function detailedTask({ record, state }: ProvidedTaskView): JsonObject {
  const task: JsonObject = { ...taskFromRecord(record), resultType: 'complete' };
  if (record.status === 'input_required' && state.inputRequests) task.inputRequests = state.inputRequests;
  const outcome = state.outcome;
  if (outcome && (record.status === 'completed' || record.status === 'failed')) {
    // ext-tasks rejects an inlined result without its own resultType (WIRE-NOTES).
    if ('result' in outcome) task.result = { ...outcome.result, resultType: outcome.result.resultType ?? 'complete' };
    else task.error = outcome.error;
  }
  return task;
}

/**
 * FailedTask.error is `{code, message, data?}`. A backend that sends something else (a string,
 * no code, nothing at all) still gets its failure shown, in the one shape clients can read.
 */
export function jsonRpcErrorOf(value: unknown): JsonObject {
  const given = isObject(value) ? value : {};
  const code = Number.isSafeInteger(given.code) ? given.code : -32603;
  const message = typeof given.message === 'string' ? given.message : typeof value === 'string' ? value : 'The task failed; the backend gave no error';
  return given.data === undefined ? { code, message } : { code, message, data: given.data };
}

function readTaskFields(value: unknown, wire: EraWire): TaskFields | undefined {
  if (!isObject(value) || typeof value.taskId !== 'string' || !isTaskStatus(value.status)) return undefined;
  const ttl = value[wire.ttlField];
  const poll = value[wire.pollIntervalField];
  return {
    taskId: value.taskId,
    status: value.status,
    statusMessage: typeof value.statusMessage === 'string' ? value.statusMessage : undefined,
    createdAt: typeof value.createdAt === 'string' ? value.createdAt : undefined,
    lastUpdatedAt: typeof value.lastUpdatedAt === 'string' ? value.lastUpdatedAt : undefined,
    ttlMs: ttl === null ? null : isNonNegative(ttl) ? wholeTtlMs(ttl) : undefined,
    pollIntervalMs: isNonNegative(poll) ? wholeIntervalMs(poll) : undefined,
  };
}

function isNonNegative(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
