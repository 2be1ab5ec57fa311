/**
 * The `mcp` stage (DESIGN.md §2, step 3): checks the media types, parses the JSON-RPC body
 * once, decides the era and, for 2026-07-28 requests, holds the mirrored headers to the
 * body. Nothing malformed reaches the upstream.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
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

/** Runs the stage; on POST, leaves the parsed body on `request.exchange.mcp`. */
export function runMcpStage(request: FastifyRequest): void {
  const headers = request.headers;
  switch (request.method) {
    case 'POST': {
      checkPostContentType(headers);
      checkPostAccept(headers);
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      // The gateway reads the text one way and forwards the original bytes: a body that is not
      // valid UTF-8 could read differently at the backend (a parser differential), so it is
      // refused before anyone reads it. isUtf8 is Node's own strict validator (simdutf):
      // overlong forms, encoded surrogates and cut sequences all fail it.
      if (!isUtf8(body)) throw new GatewayError('TG_ERR_PARSE', { detail: 'the body is not valid UTF-8' });
      const parsed = parseJsonRpcBody(body);
      const era = decideEra(parsed.messages, headers, parsed.batch);
      const message = parsed.batch ? undefined : parsed.messages[0];
      const mcp: McpContext = { messages: parsed.messages, batch: parsed.batch, era, message, body };
      // Set before the header check so that its error answer carries the request's id.
      request.exchange.mcp = mcp;
      if (era === 'modern' && message?.kind === 'request') validateModernHeaders(message, headers);
      // 2026-07-28 servers send clients no requests, so a 2026 client has nothing to answer:
      // a response can only be a mistake or a probe, and no backend needs to see it.
      if (era === 'modern' && message?.kind === 'response') {
        throw new GatewayError('TG_ERR_INVALID_REQUEST', { detail: 'a 2026-07-28 server sends no requests, so there is nothing to respond to' });
      }
      return;
    }
    case 'GET':
    case 'DELETE':
      // 2026-07-28 has no GET stream and no sessions to delete (its transport: 405). Without
      // a 2026 version header the request may be a 2025 one, which the backend answers.
      if (isModernVersion(headers['mcp-protocol-version'])) {
        throw new GatewayError('TG_ERR_METHOD_NOT_ALLOWED', { detail: `protocol revision ${MODERN_VERSION} has no ${request.method}`, headers: { allow: 'POST' } });
      }
      if (request.method === 'GET') checkGetAccept(headers);
      return;
    default:
      throw new GatewayError('TG_ERR_METHOD_NOT_ALLOWED', { headers: { allow: 'GET, POST, DELETE' } });
  }
}

/** The 2025-era session a request names; 2026-07-28 requests have none (sessions are gone). */
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
