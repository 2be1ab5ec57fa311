/**
 * Verification of one access token with jose: the token's `iss` picks a configured issuer,
 * then jwtVerify checks the signature against that issuer's keys, the algorithm against its
 * allow-list, `iss`, `aud`, `exp` (required) and `nbf`; finally the claims are mapped to a
 * Principal. Every failure becomes one of two local errors: the token is refused (401), or
 * the keys cannot be had (503). jose's own messages stay in `cause`, never in a response.
 */
import { decodeJwt, errors, jwtVerify } from 'jose';
import type { IssuerConfig } from '../config/sections/auth.js';
import { KeysUnavailableError, type KeySet } from './key-sets.js';
import { principalFromClaims, type ClaimNames, type Principal } from './principal.js';

export type RejectionOutcome = 'malformed' | 'expired' | 'invalid';

/** The token is refused. `description` is short, fixed text, safe for error_description. */
export class TokenRejectedError extends Error {
  override readonly name = 'TokenRejectedError';
  readonly outcome: RejectionOutcome;
  readonly description: string;

  constructor(outcome: RejectionOutcome, description: string, options?: { cause?: unknown }) {
    super(description, options);
    this.outcome = outcome;
    this.description = description;
  }
}

export interface TrustedIssuer {
  readonly config: IssuerConfig;
  readonly keys: KeySet;
}

export interface VerifiedToken {
  readonly principal: Principal;
  /** The issuer's claim mapping the principal was read with; part of its key (principalKeyOf). */
  readonly claims: ClaimNames;
  /** The token's exp, in seconds; bounds how long the verdict may be cached. */
  readonly exp: number | undefined;
}

const CLAIM_DESCRIPTIONS: Record<string, string> = {
  nbf: 'token not yet valid',
  aud: 'token audience is not this resource',
  iss: 'untrusted issuer',
  exp: 'token has no expiry',
  iat: 'token issued in the future',
};

export class JwtVerifier {
  private readonly issuers = new Map<string, TrustedIssuer>();

  constructor(issuers: readonly TrustedIssuer[]) {
    for (const issuer of issuers) this.issuers.set(issuer.config.issuer, issuer);
  }

  /** Every key set has been loaded once (readiness). */
  get ready(): boolean {
    return [...this.issuers.values()].every((issuer) => issuer.keys.ready);
  }

  /** The issuer identifiers, for the protected-resource metadata. */
  get issuerIds(): string[] {
    return [...this.issuers.keys()];
  }

  /**
   * `resource` is the canonical URI of the route the token was sent to: the audience a
   * token must name unless the issuer configures its own list.
   */
  async verifyToken(token: string, resource: string): Promise<VerifiedToken> {
    let unverified;
    try {
      // Only to find the issuer whose keys to use: nothing here is trusted until jwtVerify.
      unverified = decodeJwt(token);
    } catch (error) {
      throw new TokenRejectedError('malformed', 'not a signed JWT', { cause: error });
    }
    const issuer = typeof unverified.iss === 'string' ? this.issuers.get(unverified.iss) : undefined;
    if (!issuer) throw new TokenRejectedError('invalid', 'untrusted issuer');
    const { config, keys } = issuer;

    let payload;
    try {
      ({ payload } = await jwtVerify(token, keys.getKey, {
        issuer: config.issuer,
        audience: config.audiences ?? resource,
        algorithms: [...config.algorithms],
        clockTolerance: config.clockTolerance / 1000,
        // A token without exp would be good forever; RFC 9068 access tokens always carry one.
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw classify(error, keys);
    }
    const principal = principalFromClaims(payload, config.issuer, config.claims);
    if (!principal) throw new TokenRejectedError('invalid', 'token has no subject');
    return { principal, claims: config.claims, exp: payload.exp };
  }

  close(): void {
    for (const issuer of this.issuers.values()) issuer.keys.close();
  }
}

function classify(error: unknown, keys: KeySet): Error {
  const rejected = (outcome: RejectionOutcome, description: string) => new TokenRejectedError(outcome, description, { cause: error });
  if (error instanceof KeysUnavailableError) return error;
  // A set that arrived but cannot be used (not a key set, a private key in it) is the
  // issuer's problem, not the client's.
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) {
    return new KeysUnavailableError('the key set is unusable', { cause: error });
  }
  if (error instanceof errors.JWKSNoMatchingKey) {
    // An unknown kid only proves the token bad when the set it was looked up in is current.
    return keys.degraded ? new KeysUnavailableError('the key set could not be refreshed', { cause: error }) : rejected('invalid', 'no key matches the token');
  }
  if (error instanceof errors.JWTExpired) return rejected('expired', 'token expired');
  if (error instanceof errors.JWTClaimValidationFailed) return rejected('invalid', CLAIM_DESCRIPTIONS[error.claim] ?? 'token claims refused');
  if (error instanceof errors.JOSEAlgNotAllowed) return rejected('invalid', 'signature algorithm not accepted');
  if (error instanceof errors.JWSSignatureVerificationFailed) return rejected('invalid', 'signature verification failed');
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return rejected('malformed', 'not a signed JWT');
  // Anything else (an unsupported header, a key the runtime cannot import) is still a token
  // the gateway cannot accept; the cause goes to the log.
  return rejected('invalid', 'token refused');
}
