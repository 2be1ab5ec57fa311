/**
 * The 2026-07-28 mirrored request headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name). Routing
 * and policy may read them, so the gateway refuses any that disagree with the body, the source
 * of truth. Legacy requests are never checked here: those headers pass through untouched.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { TextDecoder } from 'node:util';
import { GatewayError } from '../errors.js';
import { claimedProtocolVersion, PROTOCOL_VERSION_META } from './era.js';
import { isPlainObject, type JsonRpcNotification, type JsonRpcRequest } from './jsonrpc.js';

/** RFC 7235 token68, the syntax of a bearer token: no spaces or commas, `=` only at the end. */
export const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';
/** Canonical, padded base64 only: Buffer.from(…, 'base64') would skip garbage silently. */
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** RFC 9110 field-value characters a client may send unencoded: HTAB and visible ASCII + SP. */
const PLAIN_FIELD_VALUE = /^[\t\x20-\x7e]*$/;
const ECHO_LIMIT = 64;

/**
 * Which body field `Mcp-Name` mirrors, per method: the base table plus the tasks extension's
 * `tasks/*` rows (those route a task to the instance holding it).
 */
const MCP_NAME_SOURCES: Readonly<Record<string, 'name' | 'uri' | 'taskId'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** The body field `Mcp-Name` must equal for `method`, or undefined when it carries none. */
export function mcpNameSource(method: string): 'name' | 'uri' | 'taskId' | undefined {
  // hasOwn: the method is client-supplied and must not find `constructor` & co.
  return Object.hasOwn(MCP_NAME_SOURCES, method) ? MCP_NAME_SOURCES[method] : undefined;
}

/**
 * Decodes one header value: plain visible ASCII is taken as is; `=?base64?…?=` (lowercase
 * markers, case-sensitive) is decoded as UTF-8. Returns undefined for a value a client could
 * not have sent: other characters, non-canonical base64 or invalid UTF-8 inside the sentinel.
 */
export function decodeHeaderValue(value: string): string | undefined {
  // Field parsing drops surrounding whitespace, so it is never part of the value.
  const trimmed = value.replace(/^[\t ]+|[\t ]+$/g, '');
  if (!PLAIN_FIELD_VALUE.test(trimmed)) return undefined;
  const isSentinel =
    trimmed.length >= SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length &&
    trimmed.startsWith(SENTINEL_PREFIX) &&
    trimmed.endsWith(SENTINEL_SUFFIX);
  if (!isSentinel) return trimmed;
  const payload = trimmed.slice(SENTINEL_PREFIX.length, trimmed.length - SENTINEL_SUFFIX.length);
  if (!CANONICAL_BASE64.test(payload)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.from(payload, 'base64'));
  } catch {
    return undefined;
  }
}

/**
 * Encodes one header value the gateway sends (SEP-2243): plain visible ASCII as is, anything
 * else (and a value that would read as the sentinel) as `=?base64?…?=` of its UTF-8, which
 * decodeHeaderValue reads back.
 */
export function encodeHeaderValue(value: string): string {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !value.startsWith(SENTINEL_PREFIX);
  return plain ? value : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

/** A value safe to put in an error message: no control or format characters, at most 64 long. */
function echo(value: string): string {
  const visible = Array.from(value.replace(/[\p{Cc}\p{Cf}]/gu, ''));
  return visible.length > ECHO_LIMIT ? `${visible.slice(0, ECHO_LIMIT).join('')}…` : visible.join('');
}

function mismatch(detail: string): GatewayError {
  return new GatewayError('TG_ERR_HEADER_MISMATCH', { detail });
}

type HeaderRead = { state: 'missing' } | { state: 'ok'; value: string };

/** Reads and decodes one header; a multi-valued or undecodable one is refused outright. */
function readHeader(headers: IncomingHttpHeaders, displayName: string): HeaderRead {
  const raw = headers[displayName.toLowerCase()];
  if (raw === undefined) return { state: 'missing' };
  if (typeof raw !== 'string') throw mismatch(`${displayName} header must have exactly one value`);
  const value = decodeHeaderValue(raw);
  if (value === undefined) throw mismatch(`${displayName} header value '${echo(raw)}' contains invalid characters`);
  return { state: 'ok', value };
}

function compare(displayName: string, header: HeaderRead, body: string | undefined, required: boolean): void {
  if (header.state === 'missing') {
    if (required) throw mismatch(`${displayName} header is missing`);
    return;
  }
  if (header.value !== body) {
    const bodyText = body === undefined ? 'none' : `'${echo(body)}'`;
    throw mismatch(`${displayName} header value '${echo(header.value)}' does not match body value ${bodyText}`);
  }
}

/**
 * Checks a modern (2026-07-28) message against its mirrored headers; throws
 * TG_ERR_HEADER_MISMATCH (or TG_ERR_INVALID_PARAMS for a request without its protocol version
 * in `_meta`). Notifications need no headers, but any they carry must still agree.
 * Mcp-Param-* headers need the tool's input schema and are not checked here.
 */
export function validateModernHeaders(
  message: JsonRpcRequest | JsonRpcNotification,
  headers: IncomingHttpHeaders,
): void {
  const isRequest = message.kind === 'request';
  const bodyVersion = claimedProtocolVersion(message);
  if (isRequest && bodyVersion === undefined) {
    // What a modern server answers too: the envelope is missing, the header is not the fault.
    throw new GatewayError('TG_ERR_INVALID_PARAMS', {
      detail: `params._meta["${PROTOCOL_VERSION_META}"] is required`,
    });
  }

  const version = readHeader(headers, 'MCP-Protocol-Version');
  // A notification without a body version has nothing to compare the header against.
  if (bodyVersion !== undefined) compare('MCP-Protocol-Version', version, bodyVersion, isRequest);
  compare('Mcp-Method', readHeader(headers, 'Mcp-Method'), message.method, isRequest);

  const source = mcpNameSource(message.method);
  if (source === undefined) return;
  const raw = isPlainObject(message.params) ? message.params[source] : undefined;
  const bodyName = typeof raw === 'string' ? raw : undefined;
  // Without a body value the request is malformed anyway; the upstream answers that one.
  compare('Mcp-Name', readHeader(headers, 'Mcp-Name'), bodyName, bodyName !== undefined);
}
