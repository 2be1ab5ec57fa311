/**
 * What a provided task keeps beside its record (DESIGN.md §9): the call the gateway makes to
 * the backend, the input it waits for, and the outcome once it has one. The store keeps it
 * with the record, for as long as the record (sealed at rest in Redis, like poll snapshots),
 * and writes it only together with a check of the record's revision, so two replicas moving
 * one task (a cancel and the call's answer, two tasks/update) never lose each other's step.
 */
import type { JsonRpcErrorObject } from '../mcp/jsonrpc.js';
import type { TaskRecord } from './task-record.js';

export type JsonObject = Record<string, unknown>;

export interface ProvidedCall {
  /** params of the tools/call as sent upstream: the client's, without `task`. */
  readonly params: JsonObject;
  /** The protocol headers of the client's call (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*), sent again on a retry. */
  readonly headers: Readonly<Record<string, string>>;
}

/** A terminal outcome: the backend's result, or the JSON-RPC error it answered with. */
export type ProvidedOutcome = { readonly result: JsonObject } | { readonly error: JsonRpcErrorObject };

export interface ProvidedState {
  /** The call to make again on a modern retry; dropped once the task ends (nothing retries it then). */
  readonly call?: ProvidedCall;
  /** Origin of the instance running (or that last ran) the backend call. */
  instance: string;
  /** JSON-RPC id of the running backend call (legacy: what notifications/cancelled names). */
  callId?: string;
  /** 2026-07-28: rounds so far (MRTR): every call made again, with input asked or without. */
  round: number;
  /** 2026-07-28: calls made again without input asked (a requestState alone), for the pause before the next. */
  retries?: number;
  /**
   * 2026-07-28: the task's backend time so far, in ms: every call of the task and the pauses
   * between calls made again without input, together (the time the client takes to answer is
   * not counted: the TTL bounds that). upstreams.*.providedTasks.timeout bounds it.
   */
  spentMs?: number;
  /** 2026-07-28: the input asked of the client, under keys unique over the task's life. */
  inputRequests?: Record<string, JsonObject>;
  /** 2026-07-28: for each key shown to the client, the backend's own key. */
  inputKeys?: Record<string, string>;
  /** 2026-07-28: the backend's opaque requestState, echoed on the retry; never shown to clients. */
  requestState?: string;
  /** 2026-07-28: answers received so far for this round, by the key shown to the client. */
  inputResponses?: Record<string, unknown>;
  /** 2025-11-25: server→client requests awaiting the client's answer, as the client gets them (gateway ids, the handle in related-task _meta). */
  pendingRequests?: JsonObject[];
  outcome?: ProvidedOutcome;
}

/** A provided task as read from the store: the record, its state, and the revision both are at. */
export interface ProvidedTaskView {
  readonly record: TaskRecord;
  readonly state: ProvidedState;
  readonly rev: number;
}
