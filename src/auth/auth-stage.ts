/**
 * The `auth` stage (DESIGN.md §2, step 2): bearer token → verified JWT → Principal, on every
 * request of a protected route, before its body is read. Failures are answered here:
 * 401 with a Bearer challenge (no token, or a bad one), 403 for missing scopes, 503 when the
 * issuer's keys cannot be had. Built with each policy snapshot; `forRoute` gives each route
 * the one function it calls. A snapshot built by a reload keeps the fetched key set of every
 * issuer whose jwksUri and fetch settings did not change (no refetch, no window without keys);
 * local key files are read again, so a reload picks up a rotated file.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { ConfigError } from '../config/config-error.js';
import type { IssuerConfig, JwtAuthConfig } from '../config/sections/auth.js';
import { GatewayError } from '../errors.js';
import type { RequestLog } from '../observability/logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { extractBearerToken } from './bearer-token.js';
import { bearerChallenge } from './challenge.js';
import { JwtVerifier, TokenRejectedError, type TrustedIssuer } from './jwt-verifier.js';
import { KeysUnavailableError, createRemoteKeySet, loadLocalKeySet, type KeySet } from './key-sets.js';
import { SharedResource } from '../lifecycle/shared-resource.js';
import { missingScopes, principalKeyOf, type Principal } from './principal.js';
import { SubjectToken } from './subject-token.js';
import { describeResource, type ProtectedResource } from './resource-metadata.js';
import { TokenCache, type VerifiedIdentity } from './token-cache.js';

export type VerificationOutcome = 'ok' | 'cached' | 'missing' | 'malformed' | 'expired' | 'invalid' | 'unavailable' | 'insufficient_scope';

/** What the stage reads of a request: its headers as sent (names and values in order) and its URL. */
export interface AuthInput {
  readonly rawHeaders: readonly string[];
  readonly url: string;
  readonly log: RequestLog;
}

/** Who a request speaks for, once its token is verified. */
export interface Authenticated {
  readonly principal: Principal;
  /** Opaque, stable key of the principal (auth.principalKey), what task ownership compares. */
  readonly principalKey: string;
  /** The client's verified token, kept with this request only, for an upstream whose credentials exchange it (RFC 8693). */
  readonly subjectToken: SubjectToken;
}

export interface RouteAuth {
  readonly protectedResource: ProtectedResource;
  /** The caller's verified identity, or throws the GatewayError to answer with. */
  authenticate(request: AuthInput): Promise<Authenticated>;
}

export interface AuthStageDeps {
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
}

/** Remote key sets by what fetches them: the URI and the fetch settings. */
type RemoteKeySets = Map<string, SharedResource<KeySet>>;

export class AuthStage {
  private readonly verifier: JwtVerifier;
  private readonly cache: TokenCache;
  private readonly policy: JwtAuthConfig;
  private readonly publicUrl: string;
  private readonly deps: AuthStageDeps;
  private readonly remoteKeySets: RemoteKeySets;
  private readonly keySets: readonly KeySet[];

  private constructor(policy: JwtAuthConfig, publicUrl: string, issuers: TrustedIssuer[], remoteKeySets: RemoteKeySets, deps: AuthStageDeps) {
    this.policy = policy;
    this.publicUrl = publicUrl;
    this.verifier = new JwtVerifier(issuers);
    this.keySets = issuers.map((issuer) => issuer.keys);
    this.remoteKeySets = remoteKeySets;
    this.deps = deps;
    this.cache = new TokenCache({ maxEntries: policy.tokenCache.maxEntries, maxTtlMs: policy.tokenCache.maxTtl });
  }

  /**
   * Undefined for `mode: none`. Local key files are read here, so a missing one stops the
   * start (or the reload) like any other policy problem; remote key sets start loading in the
   * background, except those kept from `previous`, the stage of the policy being replaced.
   */
  static async create(config: Config, deps: AuthStageDeps, previous?: AuthStage): Promise<AuthStage | undefined> {
    if (config.auth.mode === 'none') return undefined;
    const issuers: TrustedIssuer[] = [];
    const remoteKeySets: RemoteKeySets = new Map();
    try {
      for (const [index, issuer] of config.auth.issuers.entries()) {
        if (issuer.jwksFile !== undefined) {
          issuers.push({ config: issuer, keys: await openKeyFile(issuer.jwksFile, index) });
          continue;
        }
        const key = remoteKeySetKey(issuer);
        let shared = remoteKeySets.get(key);
        if (!shared) {
          const kept = previous?.remoteKeySets.get(key);
          shared = kept && !kept.closed ? kept.hold() : new SharedResource(openRemoteKeySet(issuer, deps), (keys) => keys.close());
          remoteKeySets.set(key, shared);
        }
        issuers.push({ config: issuer, keys: shared.value });
      }
    } catch (error) {
      for (const shared of remoteKeySets.values()) await shared.release();
      throw error;
    }
    return new AuthStage(config.auth, config.publicUrl, issuers, remoteKeySets, deps);
  }

  /** Every remote key set has been fetched once. */
  get ready(): boolean {
    return this.verifier.ready;
  }

  /** Whether every key set is loaded: waits for that, or `timeoutMs`, whichever comes first. */
  async whenLoaded(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
      timer.unref();
    });
    const loaded = Promise.all(this.keySets.map((keys) => keys.loaded)).then(() => true);
    try {
      return await Promise.race([loaded, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  get issuerIds(): string[] {
    return this.verifier.issuerIds;
  }

  forRoute(route: { path: string; scopes: readonly string[] }): RouteAuth {
    const protectedResource = describeResource(this.publicUrl, route);
    return {
      protectedResource,
      authenticate: (request) => this.authenticate(request, route.path, protectedResource),
    };
  }

  /** Lets go of the key sets (one that another stage still holds stays open). */
  async close(): Promise<void> {
    this.cache.clear();
    await Promise.all([...this.remoteKeySets.values()].map((shared) => shared.release()));
  }

  private async authenticate(request: AuthInput, routePath: string, resource: ProtectedResource): Promise<Authenticated> {
    const challenge = (outcome: VerificationOutcome, description?: string) => {
      this.count(outcome);
      const header = bearerChallenge({
        resourceMetadata: resource.metadataUrl,
        scopes: resource.scopes,
        ...(description === undefined ? {} : { error: 'invalid_token' as const, description }),
      });
      return new GatewayError('TG_ERR_UNAUTHORIZED', { detail: description, headers: { 'www-authenticate': header } });
    };

    const extracted = extractBearerToken(request.rawHeaders, request.url);
    if (extracted.kind === 'none') throw challenge('missing');
    if (extracted.kind === 'malformed') throw challenge('malformed', extracted.description);
    const token = extracted.token;

    let outcome: VerificationOutcome = 'cached';
    let identity: VerifiedIdentity | undefined = this.cache.get(token, routePath);
    if (!identity) {
      try {
        const verified = await this.verifier.verifyToken(token, resource.resource);
        identity = { principal: verified.principal, principalKey: principalKeyOf(verified.principal, verified.claims, this.policy.principalKey) };
        this.cache.set(token, routePath, identity, verified.exp);
        outcome = 'ok';
      } catch (error) {
        if (error instanceof TokenRejectedError) {
          // Not the cause itself: jose's claim errors carry the whole payload (subject, email…).
          const code = (error.cause as { code?: unknown } | undefined)?.code;
          request.log.debug({ outcome: error.outcome, reason: error.description, code }, 'bearer token refused');
          throw challenge(error.outcome, error.description);
        }
        this.count('unavailable');
        if (!(error instanceof KeysUnavailableError)) request.log.error({ err: error }, 'token verification failed unexpectedly');
        throw new GatewayError('TG_ERR_AUTH_UNAVAILABLE', { cause: error });
      }
    }

    const missing = missingScopes(identity.principal, resource.scopes);
    if (missing.length > 0) {
      this.count('insufficient_scope');
      const header = bearerChallenge({
        resourceMetadata: resource.metadataUrl,
        error: 'insufficient_scope',
        description: 'the token lacks a scope this resource requires',
        scopes: resource.scopes,
      });
      throw new GatewayError('TG_ERR_INSUFFICIENT_SCOPE', { headers: { 'www-authenticate': header } });
    }
    this.count(outcome);
    return { principal: identity.principal, principalKey: identity.principalKey, subjectToken: new SubjectToken(token) };
  }

  private count(outcome: VerificationOutcome): void {
    this.deps.metrics.jwtVerifications.inc({ outcome });
  }
}

async function openKeyFile(path: string, index: number): Promise<KeySet> {
  try {
    return await loadLocalKeySet(path);
  } catch (error) {
    throw new ConfigError('policy', [{ path: `auth.issuers[${index}].jwksFile`, message: (error as Error).message }], { cause: error });
  }
}

/** Two issuers (or two policies) with the same URI and fetch settings share one key set. */
function remoteKeySetKey(issuer: IssuerConfig): string {
  return JSON.stringify([issuer.jwksUri, issuer.jwks]);
}

function openRemoteKeySet(issuer: IssuerConfig, deps: AuthStageDeps): KeySet {
  const log = deps.logger.child({ issuer: issuer.issuer });
  return createRemoteKeySet(issuer.jwksUri!, {
    cooldownMs: issuer.jwks.cooldown,
    maxAgeMs: issuer.jwks.maxAge,
    timeoutMs: issuer.jwks.timeout,
    onRefresh: (outcome, error) => {
      deps.metrics.jwksRefreshes.inc({ outcome });
      // The cause names the host and the network error, never a key.
      if (outcome === 'error') log.warn({ err: error }, 'could not fetch the issuer\'s key set; retrying in the background');
      else log.debug('fetched the issuer\'s key set');
    },
  });
}
