/**
 * Era detection: is a POST speaking the modern wire (MCP 2026-07-28), with per-request `_meta`
 * and mirrored headers, or the legacy one (2025-11-25 and earlier) with `initialize` and sessions?
 * The decision is made once per request; the pipeline then hands the stages its strategy
 * (src/task-model/task-wire.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../errors.js';
import { isPlainObject, type JsonRpcNotification, type JsonRpcRequest, type McpMessage } from './jsonrpc.js';

import type { Era } from './era-name.js';

export type { Era };

export const MODERN_VERSION = '2026-07-28';
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
/** Where a message names the task it belongs to (both eras): `_meta[RELATED_TASK_META].taskId`. */
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

/** The first revision that forbids JSON-RPC batches. */
const FIRST_BATCHLESS_VERSION = '2025-06-18';
/** What the legacy transport tells servers to assume when MCP-Protocol-Version is absent. */
const DEFAULT_LEGACY_VERSION = '2025-03-26';
const VERSION_SHAPE = /^\d{4}-\d{2}-\d{2}$/;

/** Revisions are dates, so they order lexically; anything not date-shaped is no revision. */
function isVersion(value: unknown): value is string {
  return typeof value === 'string' && VERSION_SHAPE.test(value);
}

export function isModernVersion(value: unknown): value is string {
  return isVersion(value) && value >= MODERN_VERSION;
}

/** `params._meta` of a request or notification, when it is an object. */
export function requestMeta(message: JsonRpcRequest | JsonRpcNotification): Record<string, unknown> | undefined {
  const params = message.params;
  if (!isPlainObject(params)) return undefined;
  const meta = params._meta;
  return isPlainObject(meta) ? meta : undefined;
}

/** The protocol version the body itself claims (`_meta[...protocolVersion]`), if a string. */
export function claimedProtocolVersion(message: JsonRpcRequest | JsonRpcNotification): string | undefined {
  const value = requestMeta(message)?.[PROTOCOL_VERSION_META];
  return typeof value === 'string' ? value : undefined;
}

/** Did this request declare the tasks extension in its own capabilities (never inferred). */
export function declaresTasksExtension(request: JsonRpcRequest): boolean {
  const capabilities = requestMeta(request)?.[CLIENT_CAPABILITIES_META];
  if (!isPlainObject(capabilities)) return false;
  const extensions = capabilities.extensions;
  return isPlainObject(extensions) && isPlainObject(extensions[TASKS_EXTENSION]);
}

/**
 * The body is the source of truth (a proxy stripping a header must not change the era), but a
 * modern MCP-Protocol-Version header also makes the request modern: it then has to pass the
 * modern header checks instead of reaching a legacy route with headers nobody validated.
 * A multi-valued header is no version at all.
 *
 * `batch` comes from parseJsonRpcBody: a one-element array is still a batch.
 */
export function decideEra(messages: readonly McpMessage[], headers: IncomingHttpHeaders, batch: boolean): Era {
  const header = headers['mcp-protocol-version'];
  const headerVersion = typeof header === 'string' ? header : undefined;
  const modern =
    isModernVersion(headerVersion) ||
    messages.some((message) => message.kind !== 'response' && isModernVersion(claimedProtocolVersion(message)));
  if (batch) {
    if (modern) {
      throw new GatewayError('TG_ERR_BATCH_NOT_ALLOWED', {
        detail: `protocol revision ${MODERN_VERSION} has no batches`,
      });
    }
    const version = header === undefined ? DEFAULT_LEGACY_VERSION : headerVersion;
    if (!isVersion(version) || version >= FIRST_BATCHLESS_VERSION) {
      throw new GatewayError('TG_ERR_BATCH_NOT_ALLOWED', {
        detail: `batches end with protocol revision ${FIRST_BATCHLESS_VERSION}`,
      });
    }
    // 2025-03-26, the one revision with batches, still keeps initialize out of them.
    if (messages.some((message) => message.kind === 'request' && message.method === 'initialize')) {
      throw new GatewayError('TG_ERR_BATCH_NOT_ALLOWED', { detail: 'initialize must not be part of a batch' });
    }
  }
  return modern ? 'modern' : 'legacy';
}
