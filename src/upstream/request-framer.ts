/**
 * How the gateway frames a JSON-RPC request it makes itself, in the generation the backend
 * speaks: one place for what each era's wire asks of a client.
 * - 2026-07-28: the mirrored headers (MCP-Protocol-Version, Mcp-Method, and Mcp-Name encoded as
 *   SEP-2243 says when it is not plain ASCII) and the per-request `_meta` envelope (protocol
 *   version, client info, client capabilities: the tasks extension wherever the gateway asks
 *   about tasks);
 * - 2025-11-25: MCP-Protocol-Version once a session agreed one, and the session's Mcp-Session-Id.
 * Request ids are the gateway's own (`taskgate-<uuid>`), so its answer is told from anyone
 * else's. Credentials, trace context and time limits are the send's (gateway-send.ts), not the
 * framing's; content type and Accept are every JSON-RPC POST's (gateway-send.ts too).
 */
import { randomUUID } from 'node:crypto';
import { CLIENT_CAPABILITIES_META, MODERN_VERSION, PROTOCOL_VERSION_META, TASKS_EXTENSION } from '../mcp/era.js';
import { encodeHeaderValue } from '../mcp/headers.js';
import { isObject, type JsonObject } from '../mcp/json.js';
import type { GatewayRequest, OutgoingMessage } from './gateway-send.js';

/** The 2025 revision the gateway speaks as a client. */
export const LEGACY_VERSION = '2025-11-25';
/** Who the gateway says it is, as a client (2025 initialize, the 2026 envelope). */
export const GATEWAY_CLIENT_INFO: Readonly<JsonObject> = { name: 'taskgate', version: '0' };
/** The client capabilities of the gateway's own calls about tasks: the tasks extension. */
export const TASKS_CAPABILITIES: Readonly<JsonObject> = { extensions: { [TASKS_EXTENSION]: {} } };

/** A request framed for the wire: its id (none for a notification), headers and message. */
export interface FramedRequest extends GatewayRequest {
  readonly id?: string;
  readonly headers: Record<string, string>;
  readonly message: OutgoingMessage;
}

export function newRequestId(): string {
  return `taskgate-${randomUUID()}`;
}

/** The 2026-07-28 per-request `_meta` the gateway sends as a client, with these capabilities. */
export function modernEnvelope(clientCapabilities: Readonly<JsonObject>, version: string = MODERN_VERSION): JsonObject {
  return {
    [PROTOCOL_VERSION_META]: version,
    'io.modelcontextprotocol/clientInfo': GATEWAY_CLIENT_INFO,
    [CLIENT_CAPABILITIES_META]: clientCapabilities,
  };
}

export interface ModernFraming {
  /** The revision spoken (a record's own); MODERN_VERSION when unset. */
  readonly version?: string;
  readonly capabilities: Readonly<JsonObject>;
  /** What Mcp-Name mirrors (a tool, a prompt, a resource, a task id); none for other methods. */
  readonly name?: string;
}

/** A 2026-07-28 request: `params` with the envelope added to its `_meta` (kept otherwise). */
export function frameModern(method: string, params: JsonObject, framing: ModernFraming): FramedRequest {
  const version = framing.version ?? MODERN_VERSION;
  const headers: Record<string, string> = { 'mcp-protocol-version': version, 'mcp-method': method };
  if (framing.name !== undefined) headers['mcp-name'] = encodeHeaderValue(framing.name);
  const meta = isObject(params._meta) ? params._meta : {};
  const id = newRequestId();
  return { id, headers, message: { jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...meta, ...modernEnvelope(framing.capabilities, version) } } } };
}

export interface LegacyFraming {
  /** The session's revision; none before initialize agreed one. */
  readonly version?: string;
  /** The session's id; none for a backend that serves 2025 without sessions. */
  readonly session?: string;
}

/** A 2025 session's headers (also what ends it, a DELETE). */
export function legacyHeaders(framing: LegacyFraming): Record<string, string> {
  const headers: Record<string, string> = {};
  if (framing.version !== undefined) headers['mcp-protocol-version'] = framing.version;
  if (framing.session) headers['mcp-session-id'] = framing.session;
  return headers;
}

/** A 2025 request in a session (or, unframed by one, an initialize). */
export function frameLegacy(method: string, params: JsonObject | undefined, framing: LegacyFraming): FramedRequest {
  const id = newRequestId();
  return { id, headers: legacyHeaders(framing), message: { jsonrpc: '2.0', id, method, params } };
}

/** A 2025 notification in a session. */
export function frameLegacyNotification(method: string, framing: LegacyFraming): FramedRequest {
  return { headers: legacyHeaders(framing), message: { jsonrpc: '2.0', method } };
}

/** The gateway's answer to a 2025 backend's request (a question it asked), in its session. */
export function frameLegacyAnswer(id: string | number, result: JsonObject, framing: LegacyFraming): FramedRequest {
  return { headers: legacyHeaders(framing), message: { jsonrpc: '2.0', id, result } };
}
