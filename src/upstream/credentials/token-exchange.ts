/**
 * RFC 8693 token exchange for one upstream: the client's verified access token (the subject
 * token) is traded at the authorization server's token endpoint for a token minted for this
 * upstream (its audience and/or resource, the policy's scopes), with the gateway
 * authenticating as its own OAuth client. The client's token never travels upstream (MCP
 * forbids token passthrough); the upstream gets a token of its own, bound to the same user.
 *
 * Exchanged tokens are kept in memory, bounded, until `cache.refreshBefore` before their
 * `expires_in`, keyed by principal key, client id and granted scopes (a narrower token from
 * another client of the same user never gets a broader one's exchange). Concurrent requests
 * for one key share one exchange. Neither token is ever logged; the AS's error text is logged,
 * never sent to a client.
 */
import { randomUUID } from 'node:crypto';
import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import type { Logger } from 'pino';
import { Agent, request as undiciRequest } from 'undici';
import type { TokenExchangeConfig } from '../../config/sections/token-exchange.js';
import { GatewayError } from '../../errors.js';
import type { GatewayMetrics } from '../../observability/metrics.js';
import { TtlMap } from '../../lifecycle/ttl-map.js';
import type { Principal } from '../../task-model/principal.js';
import type { SubjectToken } from '../../auth/subject-token.js';

const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** The body of a token endpoint answer is small; anything longer is not one. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** An answer without expires_in is used for this long (RFC 6749 leaves the lifetime to the AS). */
const DEFAULT_LIFETIME_MS = 60_000;
const ASSERTION_LIFETIME_S = 60;

/** Who a token is wanted for: a Caller (upstream/backend-route.ts) has these fields. */
export interface CallerIdentity {
  readonly principal?: Principal;
  readonly principalKey?: string;
  /** The client's verified token; absent outside a client request (then only the cache can serve). */
  readonly subjectToken?: SubjectToken;
}

export interface TokenExchangerDeps {
  readonly upstream: string;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}

interface CachedToken {
  readonly token: string;
  readonly expiresAt: number;
}

export class TokenExchanger {
  private readonly cache: TtlMap<CachedToken>;
  /** Principal key → the cache key of its latest exchange, for calls without a subject token. */
  private readonly latest: TtlMap<string>;
  private readonly inFlight = new Map<string, Promise<CachedToken>>();
  private readonly agent: Agent;
  private readonly counted: (outcome: string) => void;
  private signingKey: Promise<CryptoKey> | undefined;

  constructor(
    private readonly policy: TokenExchangeConfig,
    private readonly deps: TokenExchangerDeps,
  ) {
    this.cache = new TtlMap(Math.max(1, policy.cache.maxEntries));
    this.latest = new TtlMap(Math.max(1, policy.cache.maxEntries));
    this.agent = new Agent({ connect: { timeout: policy.timeout }, headersTimeout: policy.timeout, bodyTimeout: policy.timeout, connections: 16 });
    this.counted = (outcome) => deps.metrics.tokenExchanges.inc({ upstream: deps.upstream, outcome });
  }

  /**
   * A token for `caller` on this upstream: cached, or exchanged now (`refresh` skips the cache,
   * for a retry after the upstream refused the cached one). Without a subject token only a
   * cached token can be had. Throws the GatewayError to answer with (403 refused, 503 otherwise).
   */
  async tokenFor(caller: CallerIdentity, options: { refresh?: boolean } = {}): Promise<string> {
    const owner = caller.principalKey;
    if (!caller.subjectToken || !caller.principal || owner === undefined) return this.cachedFor(owner);
    const key = cacheKey(owner, caller.principal);
    if (!options.refresh) {
      const cached = this.cache.get(key);
      if (cached) {
        this.counted('cache_hit');
        return cached.token;
      }
    }
    const running = this.inFlight.get(key);
    if (running) {
      this.counted('shared');
      return (await running).token;
    }
    const exchange = this.exchange(caller.subjectToken).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, exchange);
    const fresh = await exchange;
    const ttl = fresh.expiresAt - this.policy.cache.refreshBefore - Date.now();
    if (ttl > 0 && this.policy.cache.maxEntries > 0) {
      this.cache.set(key, fresh, ttl);
      this.latest.set(owner, key, ttl);
    }
    return fresh.token;
  }

  close(): Promise<void> {
    this.cache.clear();
    this.latest.clear();
    return this.agent.close();
  }

  private cachedFor(owner: string | undefined): string {
    const key = owner === undefined ? undefined : this.latest.get(owner);
    const cached = key === undefined ? undefined : this.cache.get(key);
    if (cached) {
      this.counted('cache_hit');
      return cached.token;
    }
    this.counted('missing');
    throw new GatewayError('TG_ERR_TOKEN_EXCHANGE_UNAVAILABLE', { detail: 'no exchanged token for this principal is cached' });
  }

  private async exchange(subject: SubjectToken): Promise<CachedToken> {
    const started = performance.now();
    try {
      const token = await this.post(subject);
      this.counted('ok');
      return token;
    } catch (error) {
      this.counted(error instanceof GatewayError && error.code === 'TG_ERR_TOKEN_EXCHANGE_REFUSED' ? 'refused' : 'unavailable');
      if (error instanceof GatewayError) throw error;
      this.deps.logger.warn({ err: error, upstream: this.deps.upstream }, 'token endpoint unreachable or too slow');
      throw new GatewayError('TG_ERR_TOKEN_EXCHANGE_UNAVAILABLE', { cause: error });
    } finally {
      this.deps.metrics.tokenExchangeDuration.observe({ upstream: this.deps.upstream }, (performance.now() - started) / 1000);
    }
  }

  private async post(subject: SubjectToken): Promise<CachedToken> {
    const { policy } = this;
    const form = new URLSearchParams({ grant_type: GRANT_TYPE, subject_token: subject.reveal(), subject_token_type: ACCESS_TOKEN_TYPE });
    if (policy.audience !== undefined) form.set('audience', policy.audience);
    if (policy.resource !== undefined) form.set('resource', policy.resource);
    if (policy.scopes.length > 0) form.set('scope', policy.scopes.join(' '));
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    await this.authenticate(form, headers);
    const response = await undiciRequest(policy.tokenEndpoint, {
      method: 'POST',
      headers,
      body: form.toString(),
      dispatcher: this.agent,
      signal: AbortSignal.timeout(policy.timeout),
    });
    const text = await readText(response.body);
    const answer = parseJsonObject(text);
    if (response.statusCode === 200) return this.acceptToken(answer);
    const oauthError = typeof answer?.error === 'string' ? answer.error : undefined;
    if (response.statusCode >= 400 && response.statusCode < 500 && oauthError !== undefined) {
      const description = typeof answer?.error_description === 'string' ? answer.error_description.slice(0, 200) : undefined;
      // invalid_client is the gateway's own configuration at fault, not the caller.
      const level = oauthError === 'invalid_client' || oauthError === 'unauthorized_client' ? 'error' : 'info';
      this.deps.logger[level]({ upstream: this.deps.upstream, status: response.statusCode, error: oauthError, description }, 'token exchange refused');
      throw new GatewayError('TG_ERR_TOKEN_EXCHANGE_REFUSED', { data: { error: oauthError.slice(0, 64) } });
    }
    this.deps.logger.warn({ upstream: this.deps.upstream, status: response.statusCode }, 'token endpoint failed');
    throw new GatewayError('TG_ERR_TOKEN_EXCHANGE_UNAVAILABLE', { detail: 'the authorization server failed' });
  }

  private acceptToken(answer: Record<string, unknown> | undefined): CachedToken {
    const token = answer?.access_token;
    const type = answer?.token_type;
    if (typeof token !== 'string' || token === '' || typeof type !== 'string' || type.toLowerCase() !== 'bearer') {
      this.deps.logger.warn({ upstream: this.deps.upstream }, 'token endpoint answered 200 without a bearer access_token');
      throw new GatewayError('TG_ERR_TOKEN_EXCHANGE_UNAVAILABLE', { detail: 'the authorization server sent no usable token' });
    }
    const expiresIn = answer?.expires_in;
    const lifetimeMs = typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : DEFAULT_LIFETIME_MS;
    return { token, expiresAt: Date.now() + lifetimeMs };
  }

  /** Adds the gateway's client authentication, as the policy says. */
  private async authenticate(form: URLSearchParams, headers: Record<string, string>): Promise<void> {
    const client = this.policy.client;
    switch (client.method) {
      case 'client_secret_basic':
        // RFC 6749 §2.3.1: each part form-urlencoded before the Basic encoding.
        headers.authorization = `Basic ${Buffer.from(`${formEncode(client.id)}:${formEncode(client.secret)}`).toString('base64')}`;
        return;
      case 'client_secret_post':
        form.set('client_id', client.id);
        form.set('client_secret', client.secret);
        return;
      case 'private_key_jwt': {
        this.signingKey ??= importPKCS8(client.privateKey, client.algorithm);
        const now = Math.floor(Date.now() / 1000);
        const assertion = await new SignJWT({ jti: randomUUID() })
          .setProtectedHeader({ alg: client.algorithm, typ: 'JWT', ...(client.keyId === undefined ? {} : { kid: client.keyId }) })
          .setIssuer(client.id)
          .setSubject(client.id)
          .setAudience(client.assertionAudience ?? this.policy.tokenEndpoint)
          .setIssuedAt(now)
          .setExpirationTime(now + ASSERTION_LIFETIME_S)
          .sign(await this.signingKey);
        form.set('client_id', client.id);
        form.set('client_assertion_type', JWT_BEARER_ASSERTION);
        form.set('client_assertion', assertion);
        return;
      }
      default: {
        const unreachable: never = client;
        throw new Error(`unknown client authentication ${String((unreachable as { method: unknown }).method)}`);
      }
    }
  }
}

function cacheKey(owner: string, principal: Principal): string {
  return `${owner}\u0000${principal.clientId ?? ''}\u0000${[...principal.scopes].sort().join(' ')}`;
}

function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

async function readText(body: AsyncIterable<Buffer | Uint8Array> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy();
      throw new Error('token endpoint answer too large');
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
