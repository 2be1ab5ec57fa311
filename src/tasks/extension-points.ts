/**
 * How capabilities plug into the tasks stage (DESIGN.md §2, STYLE.md "Folders that show the
 * pipeline"): small interfaces the core iterates without naming who implements them.
 * `gateway.ts` builds the capabilities and registers them in a TaskExtensions; the tasks stage
 * asks each registered interceptor before its own tools/call handling, and hands each result
 * of a request on its way back to the registered filters. A capability that needs a
 * gateway-run task started, driven or cancelled asks for it through GatewayRunTasks, which
 * the provided-tasks room implements: capabilities never import each other.
 *
 * This file imports nothing from the rest of tasks/, so task-context.ts can build on it
 * without a circle.
 */
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { TasksConfig } from '../config/sections/tasks.js';
import type { JsonRpcRequest } from '../mcp/jsonrpc.js';
import type { TaskObserver } from '../observability/task-observer.js';
import type { Store } from '../store/store.js';
import type { TaskRecord } from '../task-model/task-record.js';

/** What the tasks stage hands an extension with each request: the parts of its policy it may use. */
export interface StageDeps {
  readonly store: Store;
  readonly policy: TasksConfig;
  /** Whether principals are verified (auth.mode jwt). */
  readonly authEnabled: boolean;
  readonly logger: Logger;
  /** Metrics, audit trail and detectors. */
  readonly observer: TaskObserver;
  /**
   * Whether new records name their creator (the operator console is on, src/console/): its
   * issuer, and with `subject` its subject too. Undefined: they name only the owner's digest.
   */
  readonly recordCreator?: { readonly subject: boolean };
}

/** An answer the gateway gives by itself instead of forwarding. */
export interface LocalAnswer {
  readonly status: number;
  /** JSON (an object or its text), or a stream of `contentType`. */
  readonly body: unknown;
  readonly headers?: Record<string, string>;
  /** application/json unless said otherwise (an event stream of a 2025 tasks/result). */
  readonly contentType?: string;
}

/**
 * Asked, in the order registered, before the tasks stage handles a tools/call itself: the
 * first answer is the request's answer. Undefined leaves the call to the next interceptor and
 * then to the stage (which forwards it, or makes it a task).
 */
export interface ToolCallInterceptor {
  interceptToolCall(deps: StageDeps, request: FastifyRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined>;
}

/**
 * Sees the result of the request's own method on its way to the client (a JSON reply, or the
 * answering event of a stream), after the stage's own rewriting. Rewrites it in place and
 * says whether it changed anything (an unchanged result is relayed as the bytes it came as).
 */
export interface ResultFilter {
  filterResult(request: FastifyRequest, method: string, result: Record<string, unknown>): boolean;
}

/** The capabilities registered with the tasks stage. */
export interface TaskExtensions {
  readonly toolCallInterceptors: readonly ToolCallInterceptor[];
  readonly resultFilters: readonly ResultFilter[];
}

export const NO_EXTENSIONS: TaskExtensions = { toolCallInterceptors: [], resultFilters: [] };

/** How a call started by GatewayRunTasks.runDetachable is to be held. */
export interface DetachOptions {
  /** How long the gateway waits for the backend's answer before the call goes on as a task. */
  readonly detachAfterMs: number;
  /** The backend call's own limit (also capped by the task's lifetime). */
  readonly timeoutMs: number;
  /** The lifetime wanted for the task, if it becomes one; capped by tasks.ttl.max and the tool's maxTtl. */
  readonly ttlMs: number;
}

export type DetachOutcome =
  /** The backend answered within the detach time, or a limit kept the call plain: its answer. */
  | { readonly kind: 'answered'; readonly answer: LocalAnswer }
  /** The call goes on as a gateway-run task, recorded as a background call. */
  | { readonly kind: 'detached'; readonly record: TaskRecord };

/** Gateway-run tasks (src/provided/) as other capabilities may use them. */
export interface GatewayRunTasks {
  /**
   * Sends the tools/call `message` to the backend as a call the gateway holds; if it is still
   * running after `detachAfterMs`, it goes on as a gateway-run task (a background call) and
   * the record is returned. Undefined when this replica holds as many calls as it may: the
   * caller leaves the call to the normal path.
   */
  runDetachable(deps: StageDeps, request: FastifyRequest, message: JsonRpcRequest, options: DetachOptions): Promise<DetachOutcome | undefined>;
  /**
   * Cancels a gateway-run task: it is `cancelled` before this resolves, and its backend call is
   * stopped on whichever replica holds it. False when it had ended already (or is gone).
   */
  cancel(deps: StageDeps, record: TaskRecord): Promise<boolean>;
  /**
   * 2026-07-28: answers to the input a gateway-run task asks for (its inputRequests, under the
   * keys it showed), as tasks/update gives them; once every question of the round has one,
   * the backend call goes on (on this replica, with credentials for `request`). True then.
   */
  provideInput(deps: StageDeps, request: FastifyRequest, record: TaskRecord, inputResponses: Record<string, unknown>): Promise<boolean>;
}
