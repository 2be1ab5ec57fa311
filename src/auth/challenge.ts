/**
 * `WWW-Authenticate: Bearer` challenges (RFC 6750 §3, with RFC 9728 `resource_metadata` and
 * the `scope` MCP clients treat as authoritative).
 */

export type BearerError = 'invalid_token' | 'insufficient_scope';

export interface ChallengeParams {
  readonly resourceMetadata: string;
  /** Absent when the request carried no token at all (RFC 6750 §3.1). */
  readonly error?: BearerError;
  /** Fixed text from the gateway, never a library message or anything from the token. */
  readonly description?: string;
  /** The route's required scopes, if it has any. */
  readonly scopes?: readonly string[];
}

export function bearerChallenge(params: ChallengeParams): string {
  const parts: string[] = [];
  if (params.error) parts.push(`error="${quoted(params.error)}"`);
  if (params.description) parts.push(`error_description="${quoted(params.description)}"`);
  if (params.scopes && params.scopes.length > 0) parts.push(`scope="${quoted(params.scopes.join(' '))}"`);
  parts.push(`resource_metadata="${quoted(params.resourceMetadata)}"`);
  return `Bearer ${parts.join(', ')}`;
}

/**
 * Every value is the gateway's own, but a quote or backslash would still end the parameter
 * early, and RFC 6750 limits error_description to printable ASCII.
 */
function quoted(value: string): string {
  return value.replace(/[^\x20-\x7E]/g, '').replace(/["\\]/g, '\\$&');
}
