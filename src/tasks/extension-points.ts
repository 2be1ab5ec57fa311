/**
 * How capabilities plug into the tasks stage (DESIGN.md §2, STYLE.md "Folders that show the
 * pipeline"): small interfaces the core iterates without naming who implements them.
 * `gateway.ts` builds the capabilities and registers them in a TaskExtensions; the tasks stage
 * asks each registered interceptor before its own tools/call handling, and hands each result
 * of a request on its way back to the registered filters. A capability that needs a
 * gateway-run task started, driven or cancelled asks for it through GatewayRunTasks, which
 * the provided-tasks room implements: capabilities never import each other.
 *
 * This file imports nothing from the rest of tasks/, so task-context.ts can build on it without
 * a circle; the gateway's calls about task records are the door's (src/upstream/task-calls.ts).
 */
import type { Transform } from 'node:stream';
import type { TaskRequest } from './task-request.js';
import type { Logger } from 'pino';
import type { TasksConfig } from '../config/sections/tasks.js';
import type { Era } from '../mcp/era.js';
import type { JsonRpcRequest, JsonRpcResponse } from '../mcp/jsonrpc.js';
import type { TaskObserver } from '../observability/task-observer.js';
import type { Store } from '../store/store.js';
import type { ServerRequestRoute, TaskKind, TaskRecord } from '../task-model/task-record.js';
import type { UpstreamCaller, UpstreamListener } from '../upstream/task-calls.js';

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

/**
 * Everything the tasks stage works with for one policy: StageDeps, the calls the gateway makes
 * to backends itself, and the registered extensions. Built by the policy snapshot.
 */
export interface TaskDeps extends StageDeps {
  readonly callUpstream: UpstreamCaller;
  /** Opens a subscriptions/listen for backend task ids on a task's instance (src/push/). */
  readonly listenUpstream: UpstreamListener;
  /** Whether an upstream's credentials speak for the caller (token exchange, identity headers), not for the gateway. */
  readonly credentialsPerCaller: (upstream: string) => boolean;
  /** Open legacy tasks/result waits per principal on this replica (tasks.maxResultWaitsPerPrincipal). */
  readonly resultWaits: Map<string, number>;
  /** Capabilities registered at the stage's extension points. */
  readonly extensions: TaskExtensions;
}

/** An answer the gateway gives by itself instead of forwarding. */
export interface LocalAnswer {
  readonly status: number;
  /** JSON (an object or its text), or a stream of `contentType`. */
  readonly body: unknown;
  readonly headers?: Record<string, string>;
  /** application/json unless said otherwise (an event stream of a legacy tasks/result). */
  readonly contentType?: string;
}

/**
 * Asked, in the order registered, before the tasks stage handles a tools/call itself: the
 * first answer is the request's answer. Undefined leaves the call to the next interceptor and
 * then to the stage (which forwards it, or makes it a task).
 */
export interface ToolCallInterceptor {
  interceptToolCall(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined>;
}

/**
 * Sees the result of the request's own method on its way to the client (a JSON reply, or the
 * answering event of a stream), after the stage's own rewriting. Rewrites it in place and
 * says whether it changed anything (an unchanged result is relayed as the bytes it came as).
 */
export interface ResultFilter {
  filterResult(request: TaskRequest, method: string, result: Record<string, unknown>): boolean;
}

/**
 * Answers one request method in the core's place (src/push/ answers modern subscriptions/listen
 * naming task handles). Undefined leaves the request to the backend.
 */
export interface MethodTakeover {
  readonly method: string;
  /** The era whose requests it takes over; both when absent. */
  readonly era?: Era;
  takeOver(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest): Promise<LocalAnswer | undefined>;
}

/**
 * Serves the tasks of one record kind that the backend does not hold (src/provided/ serves
 * `provided`): the core finds the record and checks its owner, then hands the task operation
 * over. The core serves `backend` tasks itself.
 */
export interface TaskKindHandler {
  readonly kind: TaskKind;
  /** A tasks/* operation on one of its tasks, after the owner check passed. */
  answer(deps: TaskDeps, request: TaskRequest, message: JsonRpcRequest, record: TaskRecord): Promise<LocalAnswer>;
  /** Legacy: the client answered a server request one of its tasks asked (relayed under `handle`). */
  inputAnswered(handle: string, requestId: string): Promise<void>;
  /** Cancels one of its tasks the way its owner's tasks/cancel does; false when it had ended. */
  cancel(deps: StageDeps, record: TaskRecord): Promise<boolean>;
  /** One of its tasks was forgotten at the end of its lifetime. */
  expired(record: TaskRecord): void;
  /**
   * Optional: asks the task's backend about it now and stores what was learnt (the record, the
   * poll snapshot, an announcement when it changed); the record after it. A kind that has it is
   * polled this way while someone listens to one of its tasks (src/push/), as backend tasks are.
   */
  refresh?(deps: TaskDeps, record: TaskRecord): Promise<TaskRecord>;
  /** Upkeep with each expiry sweep (ending tasks nothing will ever answer). */
  sweep(deps: StageDeps, now: number): Promise<unknown>;
}

/** Adds messages of its own to a relayed legacy event stream (a session's GET stream). */
export interface EventStreamFilter {
  attach(request: TaskRequest, stream: Transform): Transform;
}

/**
 * A client's response to a server→client request the gateway relayed under an id of its own
 * (ServerRequestRoute): asked, in the order registered, before the stage routes the response
 * to the backend session that asked. The first answer is the request's answer (the response
 * was delivered some other way: src/bridge/ sends a modern backend's answer as tasks/update);
 * undefined leaves it to the next, then to the stage.
 */
export interface ClientResponseTaker {
  takeClientResponse(deps: StageDeps, request: TaskRequest, route: ServerRequestRoute, message: JsonRpcResponse): Promise<LocalAnswer | undefined>;
}

/** The capabilities registered with the tasks stage, each list asked in order. */
export interface TaskExtensions {
  readonly toolCallInterceptors: readonly ToolCallInterceptor[];
  readonly resultFilters: readonly ResultFilter[];
  readonly methodTakeovers: readonly MethodTakeover[];
  readonly taskKinds: readonly TaskKindHandler[];
  readonly eventStreamFilters: readonly EventStreamFilter[];
  readonly clientResponses: readonly ClientResponseTaker[];
}

export const NO_EXTENSIONS: TaskExtensions = { toolCallInterceptors: [], resultFilters: [], methodTakeovers: [], taskKinds: [], eventStreamFilters: [], clientResponses: [] };

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
  runDetachable(deps: StageDeps, request: TaskRequest, message: JsonRpcRequest, options: DetachOptions): Promise<DetachOutcome | undefined>;
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
  provideInput(deps: StageDeps, request: TaskRequest, record: TaskRecord, inputResponses: Record<string, unknown>): Promise<boolean>;
}
