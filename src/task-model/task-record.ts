/**
 * The task model, shared by the stages that handle tasks (`src/tasks/`) and the stores that
 * keep them (`src/store/`), both depend on it; the store never imports from `src/tasks/`.
 *
 * What the gateway remembers about a task it took over (DESIGN.md §3). The client only ever
 * sees `handle`; the backend only ever sees `upstreamTaskId`.
 */
import type { Era } from '../mcp/era.js';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

const STATUSES: ReadonlySet<string> = new Set(['working', 'input_required', 'completed', 'failed', 'cancelled']);
const TERMINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === 'string' && STATUSES.has(value);
}

export function isTerminalStatus(status: TaskStatus): boolean {
  return TERMINAL.has(status);
}

/**
 * Who runs a task: `backend`, a task the backend created and the gateway took over;
 * `provided`, a task the gateway runs itself around a plain tools/call (src/provided/);
 * `bridged`, a backend's task of the other era than its client's (src/bridge/): `era` is
 * the client's, `protocolVersion` the backend's.
 */
export type TaskKind = 'backend' | 'provided' | 'bridged';

export interface TaskRecord {
  readonly handle: string;
  readonly kind: TaskKind;
  /** The principal key of the creator; every task operation is checked against it. */
  readonly owner: string;
  readonly upstream: string;
  /** Origin of the instance that holds the task. */
  readonly instance: string;
  /** The path the task was created on, for calls the gateway makes itself (expiry cancels). */
  readonly upstreamPath: string;
  readonly upstreamTaskId: string;
  readonly era: Era;
  readonly tool: string;
  /** Legacy backends scope tasks to the session that created them (SDK 1.x). */
  readonly upstreamSession?: string;
  /** The protocol version the creating request used, for calls the gateway makes itself. */
  readonly protocolVersion?: string;
  /** Epoch ms, gateway clock. */
  readonly createdAt: number;
  /** The backend's own ISO timestamps, relayed in tasks/list. */
  readonly createdAtIso: string;
  lastUpdatedAtIso: string;
  /** The TTL advertised to the client (capped by policy; never unlimited). */
  ttlMs: number;
  /** createdAt + ttlMs: from then on the handle is forgotten. */
  expiresAt: number;
  /** The poll interval last told the client (after policy floors). */
  pollIntervalMs: number;
  status: TaskStatus;
  statusMessage?: string;
  /** Read-once tools: the handle is forgotten once the result has been delivered. */
  readonly readOnce: boolean;
  /**
   * With tracing on: the W3C traceparent of the creating request's server span, so the calls
   * the gateway makes for the task later join its trace (src/tracing/task-calls.ts).
   */
  readonly traceparent?: string;
  /**
   * A background call (src/background/): a gateway-run task whose client knows no tasks and
   * reaches it through the gateway's status tool. `unread` until its outcome was first
   * delivered there, so the expiry sweep can tell an abandoned call from a finished one.
   */
  backgroundCall?: 'unread' | 'read';
  /**
   * With the operator console on: the issuer of the creator's token, and (console.principals:
   * shown) its subject, so operators can tell whose task it is; `owner` is a digest of both.
   */
  readonly creatorIssuer?: string;
  readonly creatorSubject?: string;
}

export type TaskPatch = Partial<Pick<TaskRecord, 'lastUpdatedAtIso' | 'ttlMs' | 'expiresAt' | 'pollIntervalMs' | 'status' | 'statusMessage' | 'backgroundCall'>>;

/** A server→client request relayed under a gateway-chosen id, and where its answer goes. */
export interface ServerRequestRoute {
  readonly upstream: string;
  readonly instance: string;
  readonly upstreamSession?: string;
  /** The id the backend used. */
  readonly upstreamId: string | number;
  /** The provided task whose backend call sent the request (its answer moves the task on). */
  readonly handle?: string;
  /**
   * A bridged task's question (src/bridge/): the key of the backend's modern inputRequests it
   * stands for; the answer goes back as tasks/update, not as a response.
   */
  readonly inputKey?: string;
}

/** Who may reach a task: its owner, through the era and upstream it was created on. */
export interface TaskScope {
  readonly owner: string;
  readonly era: Era;
  readonly upstream: string;
}

export function isInScope(record: TaskRecord, scope: TaskScope): boolean {
  return record.owner === scope.owner && record.era === scope.era && record.upstream === scope.upstream;
}

/** Whether a patch would leave the record as it is. */
export function changesNothing(record: TaskRecord, patch: TaskPatch): boolean {
  for (const name of Object.keys(patch) as (keyof TaskPatch)[]) {
    if (patch[name] !== record[name]) return false;
  }
  return true;
}
