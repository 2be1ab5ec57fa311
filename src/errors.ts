/**
 * The error catalogue: every error the gateway itself answers with, its HTTP status and the
 * JSON-RPC code in its body. docs/errors.md documents the same table for operators.
 *
 * Two families (STYLE.md): a request that fails before the gateway knows a JSON-RPC id is
 * answered with `id: null`; one that fails after carries that id. Either way the body is a
 * JSON-RPC error object, because MCP clients parse 4xx bodies for it.
 *
 * Codes the gateway invents sit outside -32768..-32000, as the 2026-07-28 base revision asks
 * of new application codes.
 *
 * The HTTP status depends on the era of the request (statusIn): a 2026-07-28 server answers
 * some JSON-RPC errors with a 4xx (404 for -32601, 400 for -32602 and -32021), while a
 * 2025 server (SDK 1.x) answers every JSON-RPC-level error in HTTP 200 and keeps 4xx/5xx for
 * the transport (parse errors, media types, size, authentication). A 2025 client reads a 404
 * as a lost session and never sees the JSON-RPC error, so each error says which layer it
 * belongs to, and 2025 requests get the 2025 answer.
 */
import type { Era } from './mcp/era-name.js';

/** Codes this gateway allocates for itself (outside the JSON-RPC / MCP reserved range). */
export const TASKGATE_RPC_CODES = {
  pollTooEarly: -31001,
  tooManyTasks: -31002,
  rateLimited: -31003,
  unavailable: -31004,
  upstreamFailed: -31005,
  gatewayBusy: -31006,
  exchangeRefused: -31007,
  tooManySubscriptions: -31008,
  tooManyTaskIds: -31009,
} as const;

/**
 * `http`: a transport-level refusal, the same status in both eras. `rpc`: a JSON-RPC-level
 * error, answered with `httpStatus` on 2026-07-28 requests and with HTTP 200 on 2025 ones.
 */
export type ErrorLayer = 'http' | 'rpc';

export interface ErrorDescription {
  /** The status on a 2026-07-28 request (and, for the `http` layer, on every request). */
  httpStatus: number;
  layer: ErrorLayer;
  rpcCode: number;
  /** The message sent to the client. Stable: clients and tests may match on it. */
  message: string;
  /**
   * Retry-After (seconds) on a 503 the gateway answers for a condition it recovers from by
   * itself (RFC 9110 §10.2.3), so that clients back off instead of retrying at once.
   */
  retryAfterSeconds?: number;
}


interface CatalogueEntry extends ErrorDescription {
  /** When the gateway answers with it, for operators. */
  readonly when: string;
}

/**
 * The catalogue, each code written once: its layer and status, its JSON-RPC code, the message
 * the client gets, and when it is answered (docs/errors.md is generated from `when`).
 */
const CATALOGUE = {
  TG_ERR_PARSE: { layer: 'http', httpStatus: 400, rpcCode: -32700, message: 'Parse error: the body is not valid JSON', when: 'The POST body is not valid JSON (an empty body included), or not valid UTF-8 (refused before any backend sees it).' },
  TG_ERR_INVALID_REQUEST: { layer: 'http', httpStatus: 400, rpcCode: -32600, message: 'Invalid Request: the body is not a JSON-RPC 2.0 message', when: 'The body is JSON but not a JSON-RPC 2.0 message (wrong `jsonrpc`, bad id, method not a string, …), or it carries prototype-pollution keys; or a 2026-07-28 POST carries a JSON-RPC response (2026 servers send no requests to answer).' },
  TG_ERR_BATCH_NOT_ALLOWED: { layer: 'http', httpStatus: 400, rpcCode: -32600, message: 'Invalid Request: JSON-RPC batches are not allowed in this protocol revision', when: 'A JSON array body on a protocol revision that removed batches (2025-06-18 and later, and 2026-07-28).' },
  TG_ERR_BATCH_GOVERNED: { layer: 'http', httpStatus: 400, rpcCode: -32600, message: 'Invalid Request: this batch holds a message that must be sent on its own (tools/call, tasks/*, subscriptions/listen, initialize, tools/list, server/discover, or a response)', when: 'A 2025-03-26 batch (a JSON array body; a POST without MCP-Protocol-Version is taken as 2025-03-26) holding a message the gateway checks one by one: `tools/call`, any `tasks/*`, `subscriptions/listen`, `initialize`, `tools/list`, `server/discover`, or a response to a server request. The whole body is refused before any backend sees it; send such messages as single requests (docs/security.md, "Batches").' },
  TG_ERR_BODY_TOO_LARGE: { layer: 'http', httpStatus: 413, rpcCode: -32600, message: 'Invalid Request: the body exceeds the size limit', when: 'The request body is larger than `limits.maxBodyBytes`.' },
  TG_ERR_UNSUPPORTED_MEDIA_TYPE: { layer: 'http', httpStatus: 415, rpcCode: -32600, message: 'Invalid Request: Content-Type must be application/json', when: 'A POST whose Content-Type is not application/json (utf-8).' },
  TG_ERR_NOT_ACCEPTABLE: { layer: 'http', httpStatus: 406, rpcCode: -32600, message: 'Not Acceptable: Accept must list application/json and text/event-stream', when: 'A POST whose Accept does not list both application/json and text/event-stream explicitly, or a GET whose Accept lacks text/event-stream.' },
  TG_ERR_HEADER_MISMATCH: { layer: 'http', httpStatus: 400, rpcCode: -32020, message: 'Header mismatch', when: 'A 2026-07-28 request whose MCP-Protocol-Version, Mcp-Method or Mcp-Name header is missing, malformed, or differs from the body.' },
  TG_ERR_MISSING_CAPABILITY: { layer: 'rpc', httpStatus: 400, rpcCode: -32021, message: 'Missing required client capability', when: 'A 2026-07-28 request needs a client capability it did not declare (the tasks extension).' },
  TG_ERR_METHOD_NOT_FOUND: { layer: 'rpc', httpStatus: 404, rpcCode: -32601, message: 'Method not found', when: 'A method this protocol revision does not have, answered by the gateway itself.' },
  TG_ERR_INVALID_PARAMS: { layer: 'rpc', httpStatus: 400, rpcCode: -32602, message: 'Invalid params', when: 'Required params are missing or malformed (for example a 2026-07-28 request without its `_meta` protocol version).' },
  // One answer for unknown, expired and foreign tasks (DESIGN.md §3): nothing in it may
  // tell them apart, so the message names none of those reasons.
  TG_ERR_TASK_NOT_FOUND: { layer: 'rpc', httpStatus: 200, rpcCode: -32602, message: 'Failed to retrieve task: Task not found', when: 'A task handle that is unknown, expired or owned by someone else: one identical answer for all three.' },
  TG_ERR_TASK_TERMINAL: { layer: 'rpc', httpStatus: 200, rpcCode: -32602, message: 'Cannot cancel task: already in a terminal status', when: 'A 2025-11-25 tasks/cancel of a task the gateway runs itself that has already ended (completed, failed or cancelled).' },
  // What the MCP SDK's own task store answers for the result of a cancelled task.
  TG_ERR_TASK_CANCELLED: { layer: 'rpc', httpStatus: 200, rpcCode: -32603, message: 'Task was cancelled: it has no result', when: 'A 2025-11-25 tasks/result of a task the gateway runs itself that was cancelled: it has no result.' },
  TG_ERR_NOT_BRIDGED: { layer: 'rpc', httpStatus: 400, rpcCode: -32602, message: 'Invalid params: the gateway cannot carry this between task generations', when: 'A request the gateway bridges between the 2025-11-25 and 2026-07-28 task generations (docs/bridging.md) that the other generation has no form for: a 2026 backend asking a 2025 client for input before it made a task (MRTR), a 2026 client\'s plain request to a backend that serves only 2025 (`error.data.reason` says which).' },
  TG_ERR_INVALID_CURSOR: { layer: 'rpc', httpStatus: 200, rpcCode: -32602, message: 'Invalid params: unknown cursor', when: 'A 2025-11-25 tasks/list cursor the gateway did not issue.' },
  TG_ERR_HOST_NOT_ALLOWED: { layer: 'http', httpStatus: 403, rpcCode: -32600, message: 'Forbidden: Host header not allowed', when: 'The Host header names a host outside `listen.allowedHosts` (DNS-rebinding protection).' },
  TG_ERR_ORIGIN_NOT_ALLOWED: { layer: 'http', httpStatus: 403, rpcCode: -32600, message: 'Forbidden: Origin not allowed', when: 'An Origin header outside `listen.allowedOrigins` and the publicUrl origin.' },
  TG_ERR_NO_ROUTE: { layer: 'http', httpStatus: 404, rpcCode: -32600, message: 'Not Found: no route for this path', when: 'No route in the policy matches the path.' },
  TG_ERR_METHOD_NOT_ALLOWED: { layer: 'http', httpStatus: 405, rpcCode: -32600, message: 'Method Not Allowed', when: 'An HTTP method other than GET, POST or DELETE on an MCP route (Allow: GET, POST, DELETE); or a GET or DELETE with MCP-Protocol-Version 2026-07-28, an era with no GET stream and no sessions (Allow: POST).' },
  TG_ERR_SESSION_NOT_FOUND: { layer: 'http', httpStatus: 404, rpcCode: -32600, message: 'Session not found', when: 'A 2025-era Mcp-Session-Id the gateway never saw initialised on an upstream with several instances; the client must initialise again.' },
  TG_ERR_UNAUTHORIZED: { layer: 'http', httpStatus: 401, rpcCode: -32600, message: 'Unauthorized', when: 'No valid bearer token: missing, malformed, expired, wrong issuer or audience, bad signature. Carries WWW-Authenticate.' },
  TG_ERR_INSUFFICIENT_SCOPE: { layer: 'http', httpStatus: 403, rpcCode: -32600, message: 'Forbidden: insufficient scope', when: 'A valid token without the scopes the route requires. Carries WWW-Authenticate with `scope`.' },
  // Key sets are fetched again in the background, with backoff.
  TG_ERR_AUTH_UNAVAILABLE: { layer: 'http', httpStatus: 503, rpcCode: TASKGATE_RPC_CODES.unavailable, message: 'Service Unavailable: token verification keys are not available', retryAfterSeconds: 5, when: 'The signing keys of the token issuer could not be fetched yet; retried in the background. Carries Retry-After: 5.' },
  // Throttling stays HTTP 429 in both eras: Retry-After means something only with 429
  // and 503 (RFC 9110 §10.2.3), and to a 2025 client a 429 is no lost session (only a
  // 404 is). docs/errors.md says so for operators.
  TG_ERR_POLL_TOO_EARLY: { layer: 'http', httpStatus: 429, rpcCode: TASKGATE_RPC_CODES.pollTooEarly, message: 'Too Many Requests: polled sooner than the task poll interval', when: 'A task was polled sooner than its poll interval (poll mode `reject`). Carries Retry-After.' },
  TG_ERR_TOO_MANY_TASKS: { layer: 'http', httpStatus: 429, rpcCode: TASKGATE_RPC_CODES.tooManyTasks, message: 'Too Many Requests: live task limit reached', when: 'The principal already holds the maximum number of live tasks.' },
  TG_ERR_TOO_MANY_SUBSCRIPTIONS: { layer: 'http', httpStatus: 429, rpcCode: TASKGATE_RPC_CODES.tooManySubscriptions, message: 'Too Many Requests: subscription limit reached', retryAfterSeconds: 5, when: 'A subscriptions/listen naming task handles while its principal already holds `tasks.push.maxSubscriptionsPerPrincipal` such streams open on this replica. Carries Retry-After.' },
  TG_ERR_TOO_MANY_TASK_IDS: { layer: 'rpc', httpStatus: 400, rpcCode: TASKGATE_RPC_CODES.tooManyTaskIds, message: 'Invalid params: too many taskIds in one subscription', when: 'A subscriptions/listen whose `notifications.taskIds` names more than `tasks.push.maxTaskIdsPerSubscription` entries.' },
  TG_ERR_RATE_LIMITED: { layer: 'http', httpStatus: 429, rpcCode: TASKGATE_RPC_CODES.rateLimited, message: 'Too Many Requests', when: 'A per-principal limit was exceeded: task creations (`tasks.createRate`), open 2025 tasks/result waits, tools/call rate or calls in flight (`toolLimits`; `error.data` names which), or task requests (and listens naming task handles) of a principal the enumeration detector (`audit.enumeration.action: suspend`) or an operator (the console) suspended. Carries Retry-After.' },
  TG_ERR_GATEWAY_BUSY: { layer: 'http', httpStatus: 429, rpcCode: TASKGATE_RPC_CODES.gatewayBusy, message: 'Too Many Requests: this replica runs as many tasks as it may', retryAfterSeconds: 5, when: 'A 2025-11-25 task creation for a tool the gateway runs itself while this replica already holds `tasks.provided.maxRunning` backend calls. Carries Retry-After.' },
  TG_ERR_TOKEN_EXCHANGE_REFUSED: { layer: 'http', httpStatus: 403, rpcCode: TASKGATE_RPC_CODES.exchangeRefused, message: 'Forbidden: the authorization server refused a token for the upstream', when: 'The authorization server refused to exchange the client\'s token for one for this upstream (`invalid_grant`, `invalid_target`, `invalid_scope`, …; `error.data.error` is its OAuth error code). Nothing reached the upstream.' },
  TG_ERR_TOKEN_EXCHANGE_UNAVAILABLE: { layer: 'http', httpStatus: 503, rpcCode: TASKGATE_RPC_CODES.unavailable, message: 'Service Unavailable: no token for the upstream could be obtained', retryAfterSeconds: 5, when: 'The authorization server\'s token endpoint did not answer within the upstream\'s `credentials.timeout`, failed (5xx, connection refused) or sent an unusable answer; a task operation the gateway makes itself found no exchanged token to use. Nothing reached the upstream. Carries Retry-After: 5.' },
  TG_ERR_UPSTREAM_AUTH_REFUSED: { layer: 'http', httpStatus: 502, rpcCode: TASKGATE_RPC_CODES.upstreamFailed, message: 'Bad Gateway: the upstream refused the gateway\'s credentials', when: 'The upstream answered the gateway\'s own credentials 401 or 403 (with token exchange: again, after one fresh exchange). Its challenge is not passed on: it is about the gateway\'s credentials, not the client\'s.' },
  // A refusing instance cools down for upstreams.*.cooldown (10 s by default).
  TG_ERR_UPSTREAM_UNAVAILABLE: { layer: 'http', httpStatus: 503, rpcCode: TASKGATE_RPC_CODES.upstreamFailed, message: 'Service Unavailable: no upstream instance is reachable', retryAfterSeconds: 5, when: 'Every instance of the upstream refused the connection (or the one holding the session refused it). Carries Retry-After: 5.' },
  TG_ERR_UPSTREAM_TIMEOUT: { layer: 'http', httpStatus: 504, rpcCode: TASKGATE_RPC_CODES.upstreamFailed, message: 'Gateway Timeout: the upstream did not answer in time', when: 'The upstream did not answer within its timeouts, or `limits.requestTimeout` passed.' },
  TG_ERR_BAD_GATEWAY: { layer: 'http', httpStatus: 502, rpcCode: TASKGATE_RPC_CODES.upstreamFailed, message: 'Bad Gateway: the upstream answer could not be used', when: 'The upstream failed mid-request or sent an answer the gateway cannot relay (an oversize SSE event, a reset).' },
  // The store client reconnects in the background, within a second of Redis returning.
  TG_ERR_STORE_UNAVAILABLE: { layer: 'http', httpStatus: 503, rpcCode: TASKGATE_RPC_CODES.unavailable, message: 'Service Unavailable: task state is unreachable', retryAfterSeconds: 2, when: 'The state store (sessions, tasks) did not answer; task operations fail closed. Carries Retry-After: 2.' },
  TG_ERR_CONSOLE_FORBIDDEN: { layer: 'http', httpStatus: 403, rpcCode: -32600, message: 'Forbidden: this credential has no console role for this', when: 'Operator console (admin listener): valid credentials without a console role (a JWT without the viewer or operator scope), or a viewer asking for an action (cancel, suspend).' },
  TG_ERR_CONSOLE_NOT_FOUND: { layer: 'http', httpStatus: 404, rpcCode: -32600, message: 'Not Found', when: 'Operator console: no live task with that id among those the listing reads (`console.maxScan`), not a principal key, or no such API path; or the console is off (`console.enabled: false`).' },
  TG_ERR_CONSOLE_CONFLICT: { layer: 'http', httpStatus: 409, rpcCode: -32600, message: 'Conflict: the action cannot apply', when: 'Operator console: the action cannot apply: the task has already ended, or its backend refused the cancel (`error.data.backendError` says what it answered).' },
  TG_ERR_INTERNAL: { layer: 'http', httpStatus: 500, rpcCode: -32603, message: 'Internal error', when: 'A defect in the gateway; details are in the log, never in the answer.' },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof CATALOGUE;

/** When each error is answered, for operators (docs/errors.md is generated from this). */
export const ERROR_CIRCUMSTANCES: Readonly<Record<ErrorCode, string>> = Object.fromEntries(
  Object.entries(CATALOGUE).map(([code, entry]) => [code, entry.when]),
) as Record<ErrorCode, string>;

export function describeError(code: ErrorCode): ErrorDescription {
  return CATALOGUE[code];
}

/** 2025 servers answer JSON-RPC-level errors in HTTP 200; transport-level ones keep their status. */
export function httpStatusIn(description: ErrorDescription, era: Era): number {
  return era === 'legacy' && description.layer === 'rpc' ? 200 : description.httpStatus;
}

export type JsonRpcId = string | number | null;

export interface GatewayErrorOptions {
  /** A detail appended to the catalogue message (never a library error's text). */
  detail?: string;
  /** Extra JSON-RPC `error.data`. */
  data?: unknown;
  /** Extra HTTP response headers (WWW-Authenticate, Retry-After, …). */
  headers?: Record<string, string>;
  /** The underlying library error: logged, never sent. */
  cause?: unknown;
}

/** An error the gateway answers itself. Thrown by stages, rendered by one error handler. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly detail?: string;
  readonly data?: unknown;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, options: GatewayErrorOptions = {}) {
    const description = describeError(code);
    super(options.detail ? `${description.message}: ${options.detail}` : description.message, {
      cause: options.cause,
    });
    this.name = 'GatewayError';
    this.code = code;
    this.detail = options.detail;
    this.data = options.data;
    const retryAfter = description.retryAfterSeconds;
    this.headers = retryAfter === undefined ? (options.headers ?? {}) : { 'retry-after': String(retryAfter), ...options.headers };
  }

  /** The HTTP status for a request of `era` (see ErrorLayer). */
  statusIn(era: Era): number {
    return httpStatusIn(describeError(this.code), era);
  }

  get rpcCode(): number {
    return describeError(this.code).rpcCode;
  }
}

export interface JsonRpcErrorBody {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data?: unknown };
}

/** The JSON-RPC body for an error; `id` is null when the request's id is not known. */
export function renderErrorBody(error: GatewayError, id: JsonRpcId = null): JsonRpcErrorBody {
  const body: JsonRpcErrorBody = {
    jsonrpc: '2.0',
    id,
    error: { code: error.rpcCode, message: error.message },
  };
  if (error.data !== undefined) body.error.data = error.data;
  return body;
}

/**
 * What a floor below the stages (the store) fails with: a local error (the MCP SDK keeps its
 * own apart from protocol errors the same way), never sent as it is. The edge maps it to the
 * catalogue (toWireError) where it turns an error into an answer.
 */
export type LocalErrorKind = 'store-unavailable';

/** The catalogue code each local error is answered with: one entry per kind (the type checks every kind has one). */
const LOCAL_ANSWERS: Readonly<Record<LocalErrorKind, ErrorCode>> = {
  'store-unavailable': 'TG_ERR_STORE_UNAVAILABLE',
};

export class LocalError extends Error {
  constructor(
    readonly kind: LocalErrorKind,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = 'LocalError';
  }
}

/**
 * The catalogue error an error is answered with: a GatewayError as it is, a local error by
 * its kind; undefined for anything else (a defect, answered as TG_ERR_INTERNAL by the edge).
 */
export function toWireError(error: unknown): GatewayError | undefined {
  if (error instanceof GatewayError) return error;
  if (error instanceof LocalError) return new GatewayError(LOCAL_ANSWERS[error.kind], { cause: error });
  return undefined;
}
