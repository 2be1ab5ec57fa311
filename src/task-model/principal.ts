/**
 * Who a request speaks for: the verified identity the auth stage builds from a token's claims
 * (src/auth/principal.ts), on the floor below everything that reads it (task ownership, the
 * audit trail, upstream credentials), so none of them needs the auth stage to name it.
 */
export interface Principal {
  readonly issuer: string;
  readonly subject: string;
  readonly tenant?: string;
  readonly clientId?: string;
  readonly scopes: readonly string[];
}
