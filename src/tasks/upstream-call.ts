/**
 * JSON-RPC calls the gateway makes to an upstream on its own behalf: cancelling a task that
 * expired, or whose creation the gateway refused, and polling a listened-to task whose backend
 * does not push (src/push/). Best effort: failures are logged by the caller, never surfaced to
 * a client. With tracing on, each call is a client span linked to
 * the task's creation (src/tracing/task-calls.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { isModernVersion, MODERN_VERSION, TASKS_EXTENSION } from '../mcp/era.js';
import type { TaskRecord } from '../task-model/task-record.js';
import type { RequestTrace } from '../tracing/request-trace.js';
import type { TaskCallSpan } from '../tracing/task-calls.js';
import type { Tracing } from '../tracing/tracing.js';
import { readBounded } from '../upstream/relay-streams.js';

const DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** Why the call is made (a span attribute), and the client request being served, if any. */
export interface GatewayCallContext {
  readonly reason: string;
  readonly during?: RequestTrace;
  /** Read the answer's body for a tasks/cancel too (an operator's cancel reports what the backend said). */
  readonly readAnswer?: boolean;
}

/** The backend's answer: its HTTP status, and for tasks/get (and tasks/result) the body (JSON or an event stream) with its media type. */
export interface GatewayCallAnswer {
  readonly status: number;
  readonly body?: string;
  readonly contentType?: string;
}

/** tasks/result is asked only of a 2025 backend for a task that ended (src/bridge/): it answers at once then. */
export type UpstreamCaller = (record: TaskRecord, method: 'tasks/cancel' | 'tasks/get' | 'tasks/result', context: GatewayCallContext) => Promise<GatewayCallAnswer>;

export interface UpstreamCallerOptions {
  /** The dispatcher (keep-alive pool) of each upstream, by name. */
  dispatcherFor(upstream: string): Dispatcher | undefined;
  /**
   * Credentials for a call about this task: a static bearer, or for token exchange the task
   * owner's cached exchange (it rejects when none is left: the call is then not made).
   */
  credentialHeadersFor?(record: TaskRecord): Promise<Record<string, string>>;
  timeoutMs: number;
  /** The largest tasks/get answer read (limits.maxResponseBytes). */
  maxAnswerBytes?: number;
  /** The policy's tracing, if on. */
  tracing?: Tracing;
}

export function createUpstreamCaller(options: UpstreamCallerOptions): UpstreamCaller {
  return async (record, method, context) => {
    const dispatcher = options.dispatcherFor(record.upstream);
    if (!dispatcher) throw new Error(`no dispatcher for upstream ${record.upstream}`);
    const span = options.tracing?.startTaskCall({ upstream: record.upstream, instance: record.instance, task: record, method, reason: context.reason, during: context.during });
    try {
      const { headers, body } = frameCall(record, method, span);
      const credentials = await options.credentialHeadersFor?.(record);
      const response = await dispatcher.request({
        origin: record.instance,
        path: record.upstreamPath,
        method: 'POST',
        headers: { ...headers, ...credentials },
        body,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
      span?.responded(response.statusCode);
      if (method !== 'tasks/cancel' || context.readAnswer) {
        const body = await readBounded(response.body, options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES);
        const contentType = response.headers['content-type'];
        return { status: response.statusCode, body: body.toString('utf8'), contentType: Array.isArray(contentType) ? contentType[0] : contentType };
      }
      // Drain so the connection returns to the pool; the answer itself does not matter.
      await response.body.dump();
      return { status: response.statusCode };
    } catch (error) {
      span?.failed((error as { code?: string }).code ?? 'other');
      throw error;
    } finally {
      span?.end();
    }
  };
}

/**
 * Opens a 2026 subscriptions/listen on the instance holding `record` (and its siblings: same
 * instance, path and credentials) for their backend ids; the caller reads the event stream and
 * aborts `signal` to end it. Not counted in flight: a policy reload closes the old agent under
 * it, and the caller opens it again on the policy in force.
 */
export type UpstreamListener = (record: TaskRecord, upstreamTaskIds: readonly string[], signal: AbortSignal) => Promise<Dispatcher.ResponseData>;

export function createUpstreamListener(options: UpstreamCallerOptions): UpstreamListener {
  return async (record, upstreamTaskIds, signal) => {
    const dispatcher = options.dispatcherFor(record.upstream);
    if (!dispatcher) throw new Error(`no dispatcher for upstream ${record.upstream}`);
    const { headers, body } = frameCall(record, 'subscriptions/listen', undefined, { notifications: { taskIds: upstreamTaskIds } });
    const credentials = await options.credentialHeadersFor?.(record);
    return dispatcher.request({
      origin: record.instance,
      path: record.upstreamPath,
      method: 'POST',
      headers: { ...headers, ...credentials },
      body,
      signal,
      headersTimeout: options.timeoutMs,
      // A listen stream is quiet for as long as nothing changes.
      bodyTimeout: 0,
    });
  };
}

function frameCall(record: TaskRecord, method: string, span: TaskCallSpan | undefined, ownParams?: Record<string, unknown>): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const params: Record<string, unknown> = ownParams ?? { taskId: record.upstreamTaskId };
  // The backend's generation: a bridged task's is the other than its client's (src/bridge/),
  // and its record keeps the backend's protocol version.
  const modernWire = record.kind === 'bridged' ? isModernVersion(record.protocolVersion) : record.era === 'modern';
  if (modernWire) {
    const version = record.protocolVersion ?? MODERN_VERSION;
    headers['mcp-protocol-version'] = version;
    headers['mcp-method'] = method;
    if (!ownParams) headers['mcp-name'] = record.upstreamTaskId;
    params._meta = {
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientInfo': { name: 'taskgate', version: '0' },
      'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } },
    };
  } else {
    headers['mcp-protocol-version'] = record.protocolVersion ?? '2025-11-25';
    if (record.upstreamSession) headers['mcp-session-id'] = record.upstreamSession;
  }
  span?.injectHeaders(headers);
  span?.injectMeta(params);
  return { headers, body: JSON.stringify({ jsonrpc: '2.0', id: `taskgate-${randomUUID()}`, method, params }) };
}
