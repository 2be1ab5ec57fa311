// The task runtime @modelcontextprotocol/server 2.4.0 lacks: a map of tasks, each driven by a job,
// projected onto the io.modelcontextprotocol/tasks wire shapes (CreateTaskResult, DetailedTask).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallToolResult } from '@modelcontextprotocol/server';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** One entry of an `inputRequests` map: an embedded elicitation, sampling or roots request. */
export interface InputRequest {
  method: string;
  params?: Record<string, unknown>;
}

/** What a tool's work sees, whether it runs as a task or inside the tools/call request. */
export interface JobContext {
  /** Aborted by tasks/cancel, TTL expiry, server close, or (synchronous runs) client disconnect. */
  readonly signal: AbortSignal;
  sleep(ms: number): Promise<void>;
  /**
   * Asks the client for input and resolves with the responses keyed as `requests` was. As a task
   * the keys go out with a unique suffix and the task parks in `input_required`; synchronously
   * the request answers `input_required` (MRTR) and the retried call resolves this.
   */
  requestInput(requests: Record<string, InputRequest>): Promise<Record<string, unknown>>;
}

export type TaskJob = (job: JobContext) => Promise<CallToolResult>;

interface PendingInput {
  request: InputRequest;
  answer(response: unknown): void;
}

interface TaskRecord {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  result?: CallToolResult;
  error?: JsonRpcErrorObject;
  /** Outstanding input requests by their wire key; answered keys are removed. */
  pending: Map<string, PendingInput>;
  abort: AbortController;
  expiry: NodeJS.Timeout;
}

export interface TaskRegistryOptions {
  pollIntervalMs: number;
  ttlMs: number;
}

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

/** Told the id of a task whose status moved (or that was purged: `detailed()` is then undefined). */
export type TaskChangeListener = (taskId: string) => void;

export class TaskRegistry {
  readonly #tasks = new Map<string, TaskRecord>();
  readonly #opts: TaskRegistryOptions;
  readonly #listeners = new Set<TaskChangeListener>();

  constructor(opts: TaskRegistryOptions) {
    this.#opts = opts;
  }

  /** Registers the task before returning, so a tasks/get right after creation resolves. */
  create(job: TaskJob, statusMessage?: string): Record<string, unknown> {
    const now = new Date().toISOString();
    const taskId = randomUUID();
    const record: TaskRecord = {
      taskId,
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs: this.#opts.ttlMs,
      pollIntervalMs: this.#opts.pollIntervalMs,
      ...(statusMessage === undefined ? {} : { statusMessage }),
      pending: new Map(),
      abort: new AbortController(),
      // Past its TTL a task may be purged; reporting it as unknown afterwards is compliant.
      expiry: setTimeout(() => this.#purge(taskId), this.#opts.ttlMs).unref(),
    };
    this.#tasks.set(taskId, record);
    // Snapshot first: a job that asks for input at once would otherwise seed input_required,
    // which a CreateTaskResult (a Task, not a DetailedTask) cannot explain.
    const created = { resultType: 'task', ...baseFields(record) };
    void this.#drive(record, job);
    return created;
  }

  has(taskId: string): boolean {
    return this.#tasks.has(taskId);
  }

  count(): number {
    return this.#tasks.size;
  }

  /** The DetailedTask for tasks/get, or undefined for an unknown (or purged) task. */
  detailed(taskId: string): Record<string, unknown> | undefined {
    const record = this.#tasks.get(taskId);
    if (record === undefined) return undefined;
    const detailed: Record<string, unknown> = baseFields(record);
    if (record.status === 'input_required') {
      detailed.inputRequests = Object.fromEntries([...record.pending].map(([key, p]) => [key, p.request]));
    }
    // ext-tasks rejects an inlined result without its own resultType, though the spec example omits it.
    if (record.status === 'completed') detailed.result = { ...record.result, resultType: 'complete' };
    if (record.status === 'failed') detailed.error = record.error;
    return detailed;
  }

  /** Delivers responses for outstanding keys; others are ignored, as the spec recommends. */
  update(taskId: string, inputResponses: Record<string, unknown>): boolean {
    const record = this.#tasks.get(taskId);
    if (record === undefined) return false;
    for (const [key, response] of Object.entries(inputResponses)) {
      const pending = record.pending.get(key);
      if (pending === undefined) continue;
      record.pending.delete(key);
      pending.answer(response);
    }
    if (record.status === 'input_required' && record.pending.size === 0) this.#transition(record, 'working');
    return true;
  }

  /** Cooperative: the job observes the abort and the task then settles as cancelled. */
  cancel(taskId: string): boolean {
    const record = this.#tasks.get(taskId);
    if (record === undefined) return false;
    if (!TERMINAL.has(record.status)) record.abort.abort();
    return true;
  }

  /** Registers a listener for every status change and purge; returns its idempotent removal. */
  onChange(listener: TaskChangeListener): () => void {
    // A wrapper per registration, so the same function registered twice is removed once each.
    const entry: TaskChangeListener = (taskId) => listener(taskId);
    this.#listeners.add(entry);
    return () => void this.#listeners.delete(entry);
  }

  setPollInterval(taskId: string, ms: number): void {
    const record = this.#tasks.get(taskId);
    if (record === undefined) throw new Error(`unknown task ${taskId}`);
    record.pollIntervalMs = ms;
    record.lastUpdatedAt = new Date().toISOString();
  }

  close(): void {
    for (const taskId of [...this.#tasks.keys()]) this.#purge(taskId);
  }

  #purge(taskId: string): void {
    const record = this.#tasks.get(taskId);
    if (record === undefined) return;
    clearTimeout(record.expiry);
    record.abort.abort();
    this.#tasks.delete(taskId);
    this.#changed(taskId);
  }

  #changed(taskId: string): void {
    for (const listener of [...this.#listeners]) listener(taskId);
  }

  async #drive(record: TaskRecord, job: TaskJob): Promise<void> {
    const signal = record.abort.signal;
    const context: JobContext = {
      signal,
      sleep: (ms) => sleep(ms, undefined, { signal }),
      requestInput: (requests) => this.#park(record, requests),
    };
    try {
      const result = await job(context);
      if (signal.aborted) return this.#settle(record, 'cancelled', { statusMessage: 'Cancelled by request' });
      this.#settle(record, 'completed', { result });
    } catch (error) {
      if (signal.aborted) return this.#settle(record, 'cancelled', { statusMessage: 'Cancelled by request' });
      const rpcError = toJsonRpcError(error);
      this.#settle(record, 'failed', { error: rpcError, statusMessage: `Tool execution failed: ${rpcError.message}` });
    }
  }

  #park(record: TaskRecord, requests: Record<string, InputRequest>): Promise<Record<string, unknown>> {
    const entries = Object.entries(requests);
    const answers: Record<string, unknown> = {};
    let remaining = entries.length;
    return new Promise((resolve, reject) => {
      if (record.abort.signal.aborted) return reject(record.abort.signal.reason);
      const onAbort = (): void => reject(record.abort.signal.reason);
      record.abort.signal.addEventListener('abort', onAbort, { once: true });
      for (const [name, request] of entries) {
        // Keys must never repeat over a task's lifetime, so each round mints fresh ones.
        const key = `${name}-${randomUUID().slice(0, 8)}`;
        record.pending.set(key, {
          request,
          answer: (response) => {
            answers[name] = response;
            remaining -= 1;
            if (remaining > 0) return;
            record.abort.signal.removeEventListener('abort', onAbort);
            resolve(answers);
          },
        });
      }
      this.#transition(record, 'input_required');
    });
  }

  #transition(record: TaskRecord, status: TaskStatus): void {
    if (TERMINAL.has(record.status)) return;
    record.status = status;
    record.lastUpdatedAt = new Date().toISOString();
    this.#changed(record.taskId);
  }

  #settle(record: TaskRecord, status: TaskStatus, fields: Partial<TaskRecord>): void {
    if (TERMINAL.has(record.status) || !this.#tasks.has(record.taskId)) return;
    Object.assign(record, fields);
    record.pending.clear();
    this.#transition(record, status);
  }
}

function baseFields(record: TaskRecord): Record<string, unknown> {
  return {
    taskId: record.taskId,
    status: record.status,
    ...(record.statusMessage === undefined ? {} : { statusMessage: record.statusMessage }),
    createdAt: record.createdAt,
    lastUpdatedAt: record.lastUpdatedAt,
    ttlMs: record.ttlMs,
    pollIntervalMs: record.pollIntervalMs,
  };
}

/** A thrown error with a numeric code keeps it (ProtocolError); anything else is an internal error. */
export function toJsonRpcError(error: unknown): JsonRpcErrorObject {
  if (error instanceof Error && 'code' in error && Number.isSafeInteger(error.code)) {
    const data = 'data' in error ? error.data : undefined;
    return { code: error.code as number, message: error.message, ...(data === undefined ? {} : { data }) };
  }
  return { code: -32603, message: error instanceof Error ? error.message : String(error) };
}
