/**
 * A real OAuth authorization server for the token-exchange tests: oidc-provider (the certified
 * Node.js implementation), with the RFC 8693 grant registered through its registerGrantType.
 * oidc-provider authenticates the gateway as a client (client_secret_basic, client_secret_post
 * or private_key_jwt: its own code, not ours), parses the token request and answers errors
 * the RFC 6749 way; the grant handler below checks the subject token (a JWT from the test
 * issuer, verified with jose) and mints the exchanged token as oidc-provider's own JWT access
 * token for the requested resource, published at its jwks_uri.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, type JWK } from 'jose';
import Provider, { errors } from 'oidc-provider';
import type { JwksServer } from './harness.js';

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** A resource the server mints tokens for, and the scopes it may carry. */
export interface ExchangeTarget {
  readonly resource: string;
  readonly scopes: readonly string[];
  /** Lifetime of exchanged tokens, seconds. Default 300. */
  readonly ttlSeconds?: number;
}

export interface ExchangeServerOptions {
  /** Whose access tokens may be exchanged, and for which audiences. */
  readonly subjectIssuer: JwksServer;
  readonly subjectAudiences: readonly string[];
  readonly targets: readonly ExchangeTarget[];
  /** Subjects the server refuses to exchange for (invalid_grant). */
  readonly deniedSubjects?: readonly string[];
}

export interface ExchangeClients {
  basic: { id: string; secret: string };
  post: { id: string; secret: string };
  jwt: { id: string; privateKeyPem: string };
}

export interface ExchangeServer {
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly jwksUri: string;
  readonly clients: ExchangeClients;
  /** Exchanges granted so far, and the client id each was granted to. */
  readonly granted: { clientId: string; subject: string; resource: string; scope: string }[];
  /** Token requests answered with an error, by OAuth error code. */
  readonly refused: string[];
  /** Added before every token endpoint answer (a slow server). */
  delayMs: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startExchangeServer(options: ExchangeServerOptions): Promise<ExchangeServer> {
  let port = 0;
  let server: Server | undefined;
  // The port must be known before the Provider (its issuer names it): reserve one first.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const issuer = `http://127.0.0.1:${port}`;

  const signing = await generateKeyPair('ES256', { extractable: true });
  const signingJwk: JWK = { ...(await exportJWK(signing.privateKey)), kid: 'as-1', alg: 'ES256', use: 'sig' };
  const clientKey = await generateKeyPair('ES256', { extractable: true });
  const { exportPKCS8 } = await import('jose');
  const clients: ExchangeClients = {
    basic: { id: 'taskgate-basic', secret: 'basic secret: with spaces & symbols' },
    post: { id: 'taskgate-post', secret: 'post-secret-0123456789' },
    jwt: { id: 'taskgate-jwt', privateKeyPem: await exportPKCS8(clientKey.privateKey) },
  };
  const base = { grant_types: [TOKEN_EXCHANGE], response_types: [], redirect_uris: [] };
  const granted: ExchangeServer['granted'] = [];
  const refused: string[] = [];
  const targets = new Map(options.targets.map((t) => [t.resource, t]));
  const subjectKeys = () => createLocalJWKSet({ keys: options.subjectIssuer.keys.map((k) => k.jwk) });

  const provider = new Provider(issuer, {
    clients: [
      { ...base, client_id: clients.basic.id, client_secret: clients.basic.secret, token_endpoint_auth_method: 'client_secret_basic' },
      { ...base, client_id: clients.post.id, client_secret: clients.post.secret, token_endpoint_auth_method: 'client_secret_post' },
      {
        ...base,
        client_id: clients.jwt.id,
        token_endpoint_auth_method: 'private_key_jwt',
        token_endpoint_auth_signing_alg: 'ES256',
        jwks: { keys: [{ ...(await exportJWK(clientKey.publicKey)), alg: 'ES256', use: 'sig' }] },
      },
    ],
    jwks: { keys: [signingJwk] },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    enabledJWA: { clientAuthSigningAlgValues: ['ES256'], idTokenSigningAlgValues: ['ES256'] },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    features: { devInteractions: { enabled: false } },
    ttl: { AccessToken: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? 300 },
    scopes: [...new Set(options.targets.flatMap((t) => t.scopes))],
  });
  provider.on('grant.error', (_ctx: unknown, error: { error?: string }) => refused.push(error.error ?? 'unknown'));
  provider.on('server_error', (_ctx: unknown, error: unknown) => console.error('exchange server error', error));

  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx: ProviderContext) => {
      const params = ctx.oidc.params;
      if (params.subject_token_type !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest('unsupported subject_token_type');
      let subject: string;
      try {
        const { payload } = await jwtVerify(String(params.subject_token), subjectKeys(), {
          issuer: options.subjectIssuer.issuer,
          audience: [...options.subjectAudiences],
        });
        subject = String(payload.sub);
      } catch {
        throw new errors.InvalidGrant('subject token invalid');
      }
      if (options.deniedSubjects?.includes(subject)) throw new errors.InvalidGrant('subject may not use this resource');
      const target = typeof params.resource === 'string' ? targets.get(params.resource) : undefined;
      if (!target || (params.audience !== undefined && params.audience !== target.resource)) throw new errors.InvalidTarget();
      const requested = typeof params.scope === 'string' ? params.scope.split(' ').filter(Boolean) : [...target.scopes];
      if (requested.some((s) => !target.scopes.includes(s))) throw new errors.InvalidScope('requested scope is not allowed for this resource', String(params.scope));
      const scope = requested.join(' ');
      const token = new ctx.oidc.provider.AccessToken({
        accountId: subject,
        client: ctx.oidc.client,
        gty: 'token-exchange',
        scope,
        resourceServer: { audience: target.resource, scope: target.scopes.join(' '), accessTokenFormat: 'jwt', accessTokenTTL: target.ttlSeconds ?? 300, jwt: { sign: { alg: 'ES256' } } },
      });
      const value = await token.save();
      granted.push({ clientId: ctx.oidc.client.clientId, subject, resource: target.resource, scope });
      ctx.body = { access_token: value, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: token.expiration, scope };
    },
    ['subject_token', 'subject_token_type', 'audience', 'resource', 'scope', 'requested_token_type', 'actor_token', 'actor_token_type'],
    ['audience', 'resource'],
  );

  const state = { delayMs: 0 };
  const callback = provider.callback();
  const listen = async () => {
    const http = createServer((req, res) => {
      setTimeout(() => callback(req, res), state.delayMs);
    });
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, '127.0.0.1', () => resolve());
    });
    server = http;
  };
  const stop = async () => {
    const http = server;
    server = undefined;
    if (!http) return;
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  await listen();
  return {
    issuer,
    tokenEndpoint: `${issuer}/token`,
    jwksUri: `${issuer}/jwks`,
    clients,
    granted,
    refused,
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms: number) {
      state.delayMs = ms;
    },
    stop,
    start: listen,
    close: stop,
  };
}

/** The part of oidc-provider's Koa context the grant handler uses (the package has no types). */
interface ProviderContext {
  oidc: {
    params: Record<string, unknown>;
    client: { clientId: string };
    provider: { AccessToken: new (fields: Record<string, unknown>) => { save(): Promise<string>; expiration: number } };
  };
  body: unknown;
}
