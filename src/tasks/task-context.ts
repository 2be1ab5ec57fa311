/** What the tasks stage's phases share: its dependencies, policy, and the answers it makes. */
import type { TaskRequest } from './task-request.js';
import { GatewayError } from '../errors.js';
import type { CreateTaskOutcome } from '../store/create-outcome.js';
import type { NewTask } from '../task-model/record-builder.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { LocalAnswer, StageDeps, TaskDeps, TaskKindHandler } from './extension-points.js';

export type { LocalAnswer, TaskDeps };

/**
 * Counts one task creation for `owner`; throws 429 with Retry-After past the policy's rate.
 * Counted in the store, so every replica sees the same count.
 */
export async function countCreation(deps: Pick<StageDeps, 'store' | 'policy'>, owner: string): Promise<void> {
  const { limit, window } = deps.policy.createRate;
  const now = Date.now();
  const { count, resetAt } = await deps.store.countInWindow(`create:${owner}`, window, now);
  if (count > limit) {
    throw new GatewayError('TG_ERR_RATE_LIMITED', {
      detail: 'task creation rate exceeded',
      headers: { 'retry-after': String(Math.max(1, Math.ceil((resetAt - now) / 1000))) },
      data: { limit, windowMs: window },
    });
  }
}

/** A creation the store refused: the owner holds as many live tasks as it may, or the store is full. */
export function creationRefusal(deps: Pick<StageDeps, 'policy'>, outcome: Exclude<CreateTaskOutcome, 'created'>): GatewayError {
  return outcome === 'owner-limit'
    ? new GatewayError('TG_ERR_TOO_MANY_TASKS', { data: { maxLiveTasks: deps.policy.maxLivePerPrincipal } })
    : new GatewayError('TG_ERR_STORE_UNAVAILABLE', { detail: 'task store is full' });
}

/** Principal key of requests on a gateway running without authentication. */
export const ANONYMOUS_OWNER = 'anonymous';

/** The principal key that owns what this request creates and may reach. */
export function ownerOf(request: TaskRequest): string {
  return request.principalKey ?? ANONYMOUS_OWNER;
}

/** The creator fields of a new record, as deps.recordCreator says; undefined for none. */
export function creatorOf(deps: Pick<StageDeps, 'recordCreator'>, request: TaskRequest): Pick<TaskRecord, 'creatorIssuer' | 'creatorSubject'> | undefined {
  const principal = request.principal;
  if (!deps.recordCreator || !principal) return undefined;
  return deps.recordCreator.subject ? { creatorIssuer: principal.issuer, creatorSubject: principal.subject } : { creatorIssuer: principal.issuer };
}

/**
 * What a task made for this request takes from it (task-model/record-builder.ts): whose it is,
 * where it lives (its upstream, the path and `instance`), and with tracing on, the link to
 * this request's span that the calls made for the task later join (src/tracing/task-calls.ts).
 */
export function taskOrigin(request: TaskRequest, instance: string): Pick<NewTask, 'owner' | 'upstream' | 'instance' | 'upstreamPath' | 'traceparent'> {
  return {
    owner: ownerOf(request),
    upstream: request.route.pool.upstream,
    instance,
    upstreamPath: request.route.upstreamPath,
    traceparent: request.trace?.taskLink(),
  };
}

/** The protocol version the client's request named (MCP-Protocol-Version), for calls the gateway makes itself. */
export function clientProtocolVersion(request: TaskRequest): string | undefined {
  const header = request.clientHeaders['mcp-protocol-version'];
  return typeof header === 'string' && header.length <= 32 ? header : undefined;
}

/** Lifetime of the route kept for a relayed server→client request awaiting its answer. */
export const SERVER_REQUEST_TTL_MS = 60 * 60 * 1000;

/** The registered handler of a task's kind; undefined for backend tasks, which the core serves. */
export function taskKindHandler(deps: TaskDeps, record: TaskRecord): TaskKindHandler | undefined {
  return deps.extensions.taskKinds.find((handler) => handler.kind === record.kind);
}
