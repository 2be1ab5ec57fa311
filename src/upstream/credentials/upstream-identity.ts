/**
 * What each upstream learns about the caller, built once per policy: the credentials policy
 * of every upstream (upstream-credentials.ts) and, for `token-exchange`, its TokenExchanger.
 *
 * The request path obtains a token in the preHandler (BackendRoute.prepareCredentials), after
 * routing and only for requests that will reach the upstream, so the forward stays synchronous.
 * Calls the gateway makes on its own behalf use credentialsFor.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config/index.js';
import type { GatewayMetrics } from '../../observability/metrics.js';
import { TokenExchanger, type CallerIdentity } from './token-exchange.js';
import { applyUpstreamCredentials, identityHeaderNames, type CredentialsPolicy } from './credentials-policy.js';

export type { CallerIdentity };

export interface UpstreamIdentityDeps {
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}

export class UpstreamIdentity {
  private readonly policies = new Map<string, CredentialsPolicy>();

  constructor(upstreams: Config['upstreams'], deps: UpstreamIdentityDeps) {
    // Stripped from every client request on every route, so no client can pose as a principal.
    const strippedHeaders = identityHeaderNames(upstreams);
    for (const [upstream, { credentials }] of Object.entries(upstreams)) {
      const exchanger = credentials.type === 'token-exchange' ? new TokenExchanger(credentials, { upstream, ...deps }) : undefined;
      this.policies.set(upstream, { credentials, strippedHeaders, ...(exchanger ? { exchanger } : {}) });
    }
  }

  policyFor(upstream: string): CredentialsPolicy {
    const policy = this.policies.get(upstream);
    if (!policy) throw new Error(`no upstream ${upstream}`);
    return policy;
  }

  /**
   * The headers that authenticate a call to `upstream` on behalf of `caller`: the API for
   * calls the gateway makes itself, such as the backend calls of tasks the gateway runs
   * (DESIGN.md §9), which outlive the client request that started them.
   *
   * - none, bearer, identity-headers: the same headers a forwarded request gets (identity
   *   headers need `caller.principal`).
   * - token-exchange: with `caller.subjectToken` (call it while the client's request is at
   *   hand, e.g. at the start of each round of a gateway-run task), a cached token or a fresh
   *   exchange; `refresh: true` forces a fresh one, after the upstream refused the last. Without
   *   a subject token, the principal's latest cached exchange, if it has not run out; otherwise
   *   it throws GatewayError TG_ERR_TOKEN_EXCHANGE_UNAVAILABLE (503). The cache keeps a token
   *   until `cache.refreshBefore` before its expiry, so a call started with one has that long
   *   left at least: call again between rounds rather than holding headers across them.
   *
   * Throws TG_ERR_TOKEN_EXCHANGE_REFUSED (403) when the authorization server says no.
   */
  async credentialsFor(caller: CallerIdentity, upstream: string, options: { refresh?: boolean } = {}): Promise<Record<string, string>> {
    const policy = this.policyFor(upstream);
    const token = policy.exchanger ? await policy.exchanger.tokenFor(caller, options) : undefined;
    const headers: Record<string, string> = {};
    applyUpstreamCredentials(headers, policy, caller.principal, token);
    return headers;
  }

  async close(): Promise<void> {
    await Promise.all([...this.policies.values()].map((policy) => policy.exchanger?.close()));
  }
}
