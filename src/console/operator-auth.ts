/**
 * Who may use the console (docs/console.md, "Who"): a request carries Authorization: Bearer
 * with either a static token of console.tokens (compared as SHA-256 digests, in constant time)
 * or a JWT of console.jwt, verified with jose exactly as client tokens are (JwtVerifier), whose
 * scopes grant a role. No cookies are read or set, so a cross-site request carries nothing a
 * browser would add by itself.
 *
 * The verifier and its key sets belong to the console section they were built from; a reload
 * that changes console.jwt gets new ones (OperatorAuthority.for), and the old ones are closed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { extractBearerToken } from '../auth/bearer-token.js';
import { JwtVerifier, TokenRejectedError, type TrustedIssuer } from '../auth/jwt-verifier.js';
import { KeysUnavailableError, createRemoteKeySet, loadLocalKeySet, type KeySet } from '../auth/key-sets.js';
import type { ConsoleConfig, ConsoleJwtConfig, ConsoleRole } from '../config/sections/console.js';
import { GatewayError } from '../errors.js';
import type { AuditOperator } from '../observability/audit.js';
import type { GatewayMetrics } from '../observability/metrics.js';

export interface Operator extends AuditOperator {
  readonly role: ConsoleRole;
}

const CHALLENGE = 'Bearer realm="taskgate-console"';
/** The longest an operator request waits for a new issuer's first key fetch (as a reload does). */
const MAX_KEY_WAIT_MS = 10_000;

export class OperatorAuthority {
  private jwt: { config: ConsoleJwtConfig; verifier: JwtVerifier } | undefined;
  private building: Promise<void> | undefined;

  constructor(
    private readonly deps: { logger: Logger; metrics: GatewayMetrics },
  ) {}

  /**
   * The operator behind a request under `policy`, or the GatewayError to answer with: 401
   * without usable credentials, 403 for a valid JWT without a console role, 503 while the
   * operator issuer's keys cannot be had.
   */
  async authenticate(request: FastifyRequest, policy: ConsoleConfig): Promise<Operator> {
    const extracted = extractBearerToken(request.raw.rawHeaders, request.url);
    if (extracted.kind === 'none') throw this.refuse('unauthorized');
    if (extracted.kind === 'malformed') throw this.refuse('unauthorized', extracted.description);
    const fromTokens = matchStaticToken(extracted.token, policy);
    if (fromTokens) return fromTokens;
    const verifier = await this.verifierFor(policy.jwt);
    if (!verifier || policy.jwt === undefined || !looksLikeJwt(extracted.token)) throw this.refuse('unauthorized', 'unknown token');
    let principal;
    try {
      ({ principal } = await verifier.verifyToken(extracted.token, ''));
    } catch (error) {
      if (error instanceof TokenRejectedError) throw this.refuse('unauthorized', error.description);
      this.deps.metrics.consoleRequests.inc({ outcome: 'unavailable' });
      if (!(error instanceof KeysUnavailableError)) request.log.error({ err: error }, 'operator token verification failed unexpectedly');
      throw new GatewayError('TG_ERR_AUTH_UNAVAILABLE', { cause: error });
    }
    const role: ConsoleRole | undefined = principal.scopes.includes(policy.jwt.operatorScope)
      ? 'operator'
      : principal.scopes.includes(policy.jwt.viewerScope)
        ? 'viewer'
        : undefined;
    if (!role) throw this.refuse('forbidden');
    return { name: principal.subject, role, via: 'jwt', issuer: principal.issuer };
  }

  /**
   * Builds the verifier of `policy.jwt` ahead of the first operator request (at start, after a
   * reload), so that its key sets are fetched by then.
   */
  prepare(policy: ConsoleConfig): void {
    if (policy.enabled && policy.jwt) void this.verifierFor(policy.jwt).catch(() => undefined);
  }

  /** 403 for a viewer asking for an action. */
  requireOperator(operator: Operator): void {
    if (operator.role !== 'operator') throw this.refuse('forbidden', 'this action needs the operator role');
  }

  async close(): Promise<void> {
    await this.building;
    this.jwt?.verifier.close();
    this.jwt = undefined;
  }

  private refuse(outcome: 'unauthorized' | 'forbidden', detail?: string): GatewayError {
    this.deps.metrics.consoleRequests.inc({ outcome });
    if (outcome === 'forbidden') return new GatewayError('TG_ERR_CONSOLE_FORBIDDEN', { detail });
    const header = detail === undefined ? CHALLENGE : `${CHALLENGE}, error="invalid_token"`;
    return new GatewayError('TG_ERR_UNAUTHORIZED', { headers: { 'www-authenticate': header } });
  }

  /** The verifier of `config`, built once per distinct section (key files read, key sets fetched). */
  private async verifierFor(config: ConsoleJwtConfig | undefined): Promise<JwtVerifier | undefined> {
    // Checked again after every wait: from here to the assignment below nothing yields, so two
    // callers never build twice.
    while (this.building) await this.building;
    if (config === undefined) {
      if (this.jwt) this.jwt.verifier.close();
      this.jwt = undefined;
      return undefined;
    }
    if (this.jwt && isDeepStrictEqual(this.jwt.config, config)) return this.jwt.verifier;
    const previous = this.jwt;
    this.building = (async () => {
      const issuers: TrustedIssuer[] = [];
      try {
        for (const issuer of config.issuers) issuers.push({ config: issuer, keys: await this.openKeys(issuer) });
      } catch (error) {
        for (const issuer of issuers) issuer.keys.close();
        this.deps.logger.error({ err: error }, 'could not read a console issuer\'s key file; operator JWTs are refused');
        this.jwt = undefined;
        return;
      }
      this.jwt = { config, verifier: new JwtVerifier(issuers) };
      // The first fetch runs in the background; waiting for it here (at most the longest fetch
      // timeout) spares the first operator a 503 for keys that are on their way.
      await settledWithin(Promise.all(issuers.map((issuer) => issuer.keys.loaded)), Math.min(MAX_KEY_WAIT_MS, Math.max(...config.issuers.map((issuer) => issuer.jwks.timeout))));
    })().finally(() => (this.building = undefined));
    await this.building;
    previous?.verifier.close();
    return this.jwt?.verifier;
  }

  private async openKeys(issuer: ConsoleJwtConfig['issuers'][number]): Promise<KeySet> {
    if (issuer.jwksFile !== undefined) return loadLocalKeySet(issuer.jwksFile);
    const log = this.deps.logger.child({ issuer: issuer.issuer, console: true });
    return createRemoteKeySet(issuer.jwksUri!, {
      cooldownMs: issuer.jwks.cooldown,
      maxAgeMs: issuer.jwks.maxAge,
      timeoutMs: issuer.jwks.timeout,
      onRefresh: (outcome, error) => {
        this.deps.metrics.jwksRefreshes.inc({ outcome });
        if (outcome === 'error') log.warn({ err: error }, 'could not fetch the console issuer\'s key set; retrying in the background');
      },
    });
  }
}

/** Every configured token is compared (no early exit), each as a digest of equal length. */
function matchStaticToken(token: string, policy: ConsoleConfig): Operator | undefined {
  const presented = digest(token);
  let found: Operator | undefined;
  for (const entry of policy.tokens) {
    if (timingSafeEqual(presented, digest(entry.token)) && !found) found = { name: entry.name, role: entry.role, via: 'token' };
  }
  return found;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Three base64url parts: what a compact JWS looks like (a static token may not). */
function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

async function settledWithin(done: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  try {
    await Promise.race([done.then(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
