/**
 * Content-Type and Accept checks for the MCP endpoint, and reply type tests. Media types are
 * parsed (fast-content-type-parse, negotiator), never matched as substrings: a substring test
 * takes `application/jsonx` or `text/event-stream-ish` for the real thing.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { safeParse } from 'fast-content-type-parse';
import Negotiator from 'negotiator';
import { GatewayError } from '../errors.js';
import { TtlMap } from '../lifecycle/ttl-map.js';

const JSON_TYPE = 'application/json';
const EVENT_STREAM_TYPE = 'text/event-stream';
/** JSON is UTF-8 (RFC 8259); a body declared in another charset would be misread. */
const UTF8_CHARSET = /^utf-?8$/i;
const ACCEPT_CACHE_SIZE = 256;
const acceptCache = new TtlMap<ReadonlySet<string>>(ACCEPT_CACHE_SIZE);
const NOTHING: ReadonlySet<string> = new Set();

/** The parsed, lowercased media type, or '' when the header is absent or malformed. */
function mediaTypeOf(contentType: string | undefined): { type: string; charset: string | undefined } {
  if (contentType === undefined) return { type: '', charset: undefined };
  const parsed = safeParse(contentType);
  return { type: parsed.type, charset: parsed.parameters.charset };
}

export function isJson(contentType: string | undefined): boolean {
  return mediaTypeOf(contentType).type === JSON_TYPE;
}

export function isEventStream(contentType: string | undefined): boolean {
  return mediaTypeOf(contentType).type === EVENT_STREAM_TYPE;
}

export function checkPostContentType(headers: IncomingHttpHeaders): void {
  const { type, charset } = mediaTypeOf(headers['content-type']);
  if (type !== JSON_TYPE || (charset !== undefined && !UTF8_CHARSET.test(charset))) {
    throw new GatewayError('TG_ERR_UNSUPPORTED_MEDIA_TYPE');
  }
}

/**
 * The media types Accept names explicitly with q > 0, lowercased. Wildcards are kept as
 * written and so never equal a concrete type: SDK servers answer 406 to a bare wildcard, and
 * the gateway must not pass on a request the backend will refuse.
 */
function explicitlyAccepted(headers: IncomingHttpHeaders): ReadonlySet<string> {
  const accept = headers.accept;
  // Negotiator reads a missing Accept as the full wildcard; here an absent header lists nothing.
  if (accept === undefined) return NOTHING;
  const known = acceptCache.get(accept);
  if (known) return known;
  const listed = new Set(new Negotiator({ headers: { accept } }).mediaTypes().map((type) => type.toLowerCase()));
  // A client sends the same Accept on every request, so each distinct value is parsed once.
  // Bounded, oldest out: a client sending a new value each time only costs itself the parse.
  // Module-level on purpose: it memoizes a pure parse, so gateways in one process may share it.
  acceptCache.set(accept, listed, Infinity);
  return listed;
}

export function checkPostAccept(headers: IncomingHttpHeaders): void {
  const accepted = explicitlyAccepted(headers);
  if (!accepted.has(JSON_TYPE) || !accepted.has(EVENT_STREAM_TYPE)) {
    throw new GatewayError('TG_ERR_NOT_ACCEPTABLE');
  }
}

export function checkGetAccept(headers: IncomingHttpHeaders): void {
  if (!explicitlyAccepted(headers).has(EVENT_STREAM_TYPE)) {
    throw new GatewayError('TG_ERR_NOT_ACCEPTABLE', { detail: 'a GET stream needs Accept: text/event-stream' });
  }
}
