/**
 * What the upstream learns about the caller. The client's token is for this gateway only
 * (MCP forbids token passthrough), so `Authorization` is always removed; so is every header
 * the gateway uses to pass identity, whatever this upstream's credentials type, so that no
 * client can claim an identity by sending one. Then this upstream's credentials are applied.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Config, UpstreamConfig } from '../../config/index.js';
import type { Principal } from '../../task-model/principal.js';
import type { TokenExchanger } from './token-exchange.js';

export type UpstreamCredentials = UpstreamConfig['credentials'];

export interface CredentialsPolicy {
  readonly credentials: UpstreamCredentials;
  /** Header names removed from every client request before anything is added. */
  readonly strippedHeaders: ReadonlySet<string>;
  /** For credentials type token-exchange: where this upstream's tokens come from. */
  readonly exchanger?: TokenExchanger;
}

// Reserved whatever the policy says, so that a header name dropped from the policy later
// (or a second gateway in the chain using the defaults) can never be spoofed either.
const RESERVED_PREFIX = 'x-taskgate-';

/** Every identity header name any upstream uses: stripped on every route. */
export function identityHeaderNames(upstreams: Config['upstreams']): Set<string> {
  const names = new Set<string>();
  for (const upstream of Object.values(upstreams)) {
    if (upstream.credentials.type === 'identity-headers') for (const name of Object.values(upstream.credentials.headers)) names.add(name);
  }
  return names;
}

/**
 * Rewrites `headers` (reply-from's copy of the client's headers) in place. `upstreamToken` is
 * the token obtained for this upstream beforehand (token-exchange; see upstream-identity.ts).
 */
export function applyUpstreamCredentials(headers: IncomingHttpHeaders, policy: CredentialsPolicy, principal: Principal | undefined, upstreamToken?: string): void {
  delete headers.authorization;
  for (const name of Object.keys(headers)) {
    if (name.startsWith(RESERVED_PREFIX) || policy.strippedHeaders.has(name)) delete headers[name];
  }
  const credentials = policy.credentials;
  switch (credentials.type) {
    case 'none':
      return;
    case 'bearer':
      headers.authorization = `Bearer ${credentials.token}`;
      return;
    case 'identity-headers': {
      // The relation checks allow this type only with auth.mode jwt, so every request that
      // gets here carries a principal; without one nothing is added.
      if (!principal) return;
      const names = credentials.headers;
      headers[names.subject] = headerValue(principal.subject);
      headers[names.issuer] = headerValue(principal.issuer);
      if (principal.tenant !== undefined) headers[names.tenant] = headerValue(principal.tenant);
      if (principal.clientId !== undefined) headers[names.clientId] = headerValue(principal.clientId);
      headers[names.scopes] = headerValue(principal.scopes.join(' '));
      return;
    }
    case 'token-exchange':
      // Obtained in the preHandler (BackendRoute.prepareCredentials); without one the upstream gets no
      // credentials and refuses, which the gateway answers 502.
      if (upstreamToken !== undefined) headers.authorization = `Bearer ${upstreamToken}`;
      return;
    default: {
      const unreachable: never = credentials;
      throw new Error(`unknown credentials type ${String((unreachable as { type: unknown }).type)}`);
    }
  }
}

const PLAIN = /^[\x21-\x24\x26-\x7E](?:[\x20-\x24\x26-\x7E]*[\x21-\x24\x26-\x7E])?$/;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/**
 * Claims are arbitrary Unicode, header values are not. A value of printable ASCII without `%`
 * (and without edge spaces, which HTTP would trim) is sent as is; anything else is
 * percent-encoded as UTF-8. Either way `decodeURIComponent` on the upstream yields the claim.
 */
export function headerValue(value: string): string {
  if (value === '' || PLAIN.test(value)) return value;
  let out = '';
  // Buffer.from replaces lone surrogates, where encodeURIComponent would throw.
  for (const byte of Buffer.from(value, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += byte < 0x80 && UNRESERVED.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
