/**
 * The `mcp` stage (DESIGN.md §2, step 3): checks the media types, parses the JSON-RPC body
 * once, decides the era and, for 2026-07-28 requests, holds the mirrored headers to the
 * body. Nothing malformed reaches the upstream.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../errors.js';
import { decideEra, isModernVersion, MODERN_VERSION, type Era } from './era.js';
import { validateModernHeaders } from './headers.js';
import { parseJsonRpcBody, type McpMessage } from './jsonrpc.js';
import { checkGetAccept, checkPostAccept, checkPostContentType } from './media-type.js';

export interface McpContext {
  readonly messages: McpMessage[];
  readonly batch: boolean;
  readonly era: Era;
  /** The single message of a non-batch body; undefined for batches. */
  readonly message: McpMessage | undefined;
  /** The raw body as received, forwarded unchanged unless a stage rewrites it. */
  body: Buffer;
}

/**
 * A POST: its media types checked, its body parsed once and its era decided. Throws the
 * GatewayError to answer with; a body that parsed but breaks a rule of its era is left to
 * checkMessageRules, so that its error answer can carry the request's id.
 */
export function parseMcpPost(headers: IncomingHttpHeaders, received: unknown): McpContext {
  checkPostContentType(headers);
  checkPostAccept(headers);
  const body = Buffer.isBuffer(received) ? received : Buffer.alloc(0);
  // The gateway reads the text one way and forwards the original bytes: a body that is not
  // valid UTF-8 could read differently at the backend (a parser differential), so it is
  // refused before anyone reads it. isUtf8 is Node's own strict validator (simdutf):
  // overlong forms, encoded surrogates and cut sequences all fail it.
  if (!isUtf8(body)) throw new GatewayError('TG_ERR_PARSE', { detail: 'the body is not valid UTF-8' });
  const parsed = parseJsonRpcBody(body);
  const era = decideEra(parsed.messages, headers, parsed.batch);
  const message = parsed.batch ? undefined : parsed.messages[0];
  return { messages: parsed.messages, batch: parsed.batch, era, message, body };
}

/** The rules a parsed POST must keep in its era: 2026-07-28's mirrored headers, and no responses. */
export function checkMessageRules(mcp: McpContext, headers: IncomingHttpHeaders): void {
  const { era, message } = mcp;
  if (era === 'modern' && message?.kind === 'request') validateModernHeaders(message, headers);
  // 2026-07-28 servers send clients no requests, so a 2026 client has nothing to answer:
  // a response can only be a mistake or a probe, and no backend needs to see it.
  if (era === 'modern' && message?.kind === 'response') {
    throw new GatewayError('TG_ERR_INVALID_REQUEST', { detail: 'a 2026-07-28 server sends no requests, so there is nothing to respond to' });
  }
}

/** Every other HTTP method: GET opens a 2025 stream, DELETE ends a 2025 session; nothing else is MCP. */
export function checkOtherMethod(method: string, headers: IncomingHttpHeaders): void {
  switch (method) {
    case 'GET':
    case 'DELETE':
      // 2026-07-28 has no GET stream and no sessions to delete (its transport: 405). Without
      // a 2026 version header the request may be a 2025 one, which the backend answers.
      if (isModernVersion(headers['mcp-protocol-version'])) {
        throw new GatewayError('TG_ERR_METHOD_NOT_ALLOWED', { detail: `protocol revision ${MODERN_VERSION} has no ${method}`, headers: { allow: 'POST' } });
      }
      if (method === 'GET') checkGetAccept(headers);
      return;
    default:
      throw new GatewayError('TG_ERR_METHOD_NOT_ALLOWED', { headers: { allow: 'GET, POST, DELETE' } });
  }
}

/** The legacy session a request names; modern requests have none (sessions are gone). */
export function sessionIdOf(era: Era | undefined, headers: IncomingHttpHeaders): string | undefined {
  if (era === 'modern') return undefined;
  const value = headers['mcp-session-id'];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/**
 * The 2025 session the upstream knows this request by: a task's own session when the tasks
 * stage pinned one (null: none), else the client's.
 */
export function upstreamSessionOf(request: { readonly upstreamHeaders?: Record<string, string | null>; readonly sessionId?: string }): string | undefined {
  const pinned = request.upstreamHeaders?.['mcp-session-id'];
  if (pinned !== undefined) return pinned ?? undefined;
  return request.sessionId;
}
