/**
 * The verified identity behind a request, and the key that later stages (task ownership)
 * compare. Built from a token's claims only after its signature and claims were checked.
 */
import { createHash } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { SCOPE_TOKEN } from '../config/sections/routes.js';
import type { IssuerConfig, JwtAuthConfig } from '../config/sections/auth.js';

import type { Principal } from '../task-model/principal.js';

export type { Principal };

export type ClaimNames = IssuerConfig['claims'];
export type PrincipalKeyPolicy = JwtAuthConfig['principalKey'];

/** The principal a verified payload names, or undefined when it names no subject. */
export function principalFromClaims(payload: JWTPayload, issuer: string, claims: ClaimNames): Principal | undefined {
  const subject = payload[claims.subject];
  if (typeof subject !== 'string' || subject === '') return undefined;
  const tenant = claims.tenant === undefined ? undefined : identifierClaim(payload[claims.tenant]);
  const clientId = identifierClaim(payload[claims.clientId]) ?? identifierClaim(payload.azp);
  return {
    issuer,
    subject,
    ...(tenant === undefined ? {} : { tenant }),
    ...(clientId === undefined ? {} : { clientId }),
    scopes: scopesClaim(payload[claims.scopes]),
  };
}

/** Some issuers write tenant ids as numbers; both forms name the same tenant. */
function identifierClaim(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * `scope` is a space-delimited string (RFC 8693 / RFC 9068); `scp` and friends are arrays.
 * Values that are not scope-tokens could never match a configured scope and could not be
 * passed on in a header unambiguously, so they are dropped.
 */
function scopesClaim(value: unknown): string[] {
  const items = typeof value === 'string' ? value.split(' ') : Array.isArray(value) ? value : [];
  const scopes = items.filter((s): s is string => typeof s === 'string' && SCOPE_TOKEN.test(s));
  return [...new Set(scopes)];
}

/**
 * The tag that opens every principal key's hashed parts. Version 2 put the claim mapping into
 * the key; version 1 keys (`[issuer, subject, tenant, clientId]`, before it) are no longer
 * produced, so a task owned by one is unreachable after the upgrade (docs/operations.md).
 */
const KEY_FORMAT = 'taskgate-principal/2';

/**
 * A stable, opaque key for ownership: the same person through the same issuer (and tenant,
 * and client, as the policy says) gets the same key on every replica and across restarts.
 *
 * Each value is keyed together with the name of the claim it was read from (`claims`, the
 * issuer's mapping), because a value means something only with its claim: after a reload from
 * `subject: sub` to `subject: email`, a user whose email equals another user's old `sub` must
 * not become that user. A part the policy leaves out (`null`) is kept apart from a part it
 * includes but the token lacks (`[claim, null]`), so switching includeTenant on or off cannot
 * hand a tenant-less principal's tasks to a principal in a tenant, or the other way round.
 * The clientId mapping is one claim, "claims.clientId, else azp", as principalFromClaims
 * reads it. Hashing a JSON array keeps the parts unambiguous (every string is quoted and
 * escaped, so no separator can be smuggled into a subject) and keeps raw identifiers out of
 * places that only need equality.
 */
export function principalKeyOf(principal: Principal, claims: ClaimNames, policy: PrincipalKeyPolicy): string {
  const parts = [
    KEY_FORMAT,
    principal.issuer,
    [claims.subject, principal.subject],
    policy.includeTenant && claims.tenant !== undefined ? [claims.tenant, principal.tenant ?? null] : null,
    policy.includeClientId ? [claims.clientId, principal.clientId ?? null] : null,
  ];
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url');
}

/** Which of `required` the principal lacks (all are needed). */
export function missingScopes(principal: Principal, required: readonly string[]): string[] {
  return required.filter((scope) => !principal.scopes.includes(scope));
}
