/**
 * Finding the access token in a request (RFC 6750 §2.1, as MCP requires: the header only,
 * never the query string). Pure and synchronous: the verifier never sees anything that is
 * not one well-formed token.
 */

import { TOKEN68 } from '../mcp/headers.js';

/**
 * Real access tokens are one to two KiB. A bound keeps hashing and base64 decoding of
 * attacker-supplied text small. Tokens larger than the listener's header limit
 * (limits.maxHeaderBytes) never get here: Node answers those with 431 itself.
 */
export const MAX_TOKEN_LENGTH = 8 * 1024;

const SCHEME_AND_CREDENTIALS = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)(?: +(.*))?$/;

export type TokenExtraction =
  /** No bearer credentials at all: no header, or another scheme (RFC 6750 §3.1: no error code). */
  | { readonly kind: 'none' }
  /** Something was sent but it is not one usable token. `description` is safe to send. */
  | { readonly kind: 'malformed'; readonly description: string }
  | { readonly kind: 'token'; readonly token: string };

/**
 * `rawHeaders` rather than the parsed headers: Node keeps only the first of two
 * Authorization headers there, and a request carrying two must be refused, not half-read.
 */
export function extractBearerToken(rawHeaders: readonly string[], url: string): TokenExtraction {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === 'authorization') values.push(rawHeaders[i + 1]!);
  }
  // A token only in the query string is treated as no token at all: MCP forbids that
  // channel, and answering "invalid" would suggest the gateway had looked at it.
  if (values.length === 0) return { kind: 'none' };
  if (values.length > 1) return { kind: 'malformed', description: 'more than one Authorization header' };

  const match = SCHEME_AND_CREDENTIALS.exec(values[0]!.trim());
  if (!match || match[1]!.toLowerCase() !== 'bearer') return { kind: 'none' };
  const token = match[2]?.trim() ?? '';
  if (token === '') return { kind: 'malformed', description: 'empty bearer token' };
  if (token.length > MAX_TOKEN_LENGTH) return { kind: 'malformed', description: 'bearer token too long' };
  if (!TOKEN68.test(token)) return { kind: 'malformed', description: 'not a single bearer token' };
  // Two ways of sending a token at once is an invalid request (RFC 6750 §2); refusing it also
  // keeps a token in the URL from being forwarded upstream with an otherwise good request.
  if (hasQueryToken(url)) return { kind: 'malformed', description: 'access_token in the query string is not accepted' };
  return { kind: 'token', token };
}

function hasQueryToken(url: string): boolean {
  const query = url.indexOf('?');
  return query !== -1 && new URLSearchParams(url.slice(query + 1)).has('access_token');
}
