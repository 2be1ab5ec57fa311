/**
 * Verified tokens, remembered so that a client polling a task with one token pays for one
 * signature check rather than one per poll. Keys are SHA-256 digests, never tokens, so a heap
 * dump does not hand out credentials; each key also names the route, because a token good
 * for one route's audience and scopes says nothing about another's.
 */
import { hash } from 'node:crypto';
import { TtlMap } from '../lifecycle/ttl-map.js';
import type { Principal } from './principal.js';

export interface VerifiedIdentity {
  readonly principal: Principal;
  readonly principalKey: string;
}

export interface TokenCacheOptions {
  /** 0 turns the cache off. */
  readonly maxEntries: number;
  /** Longest an entry lives, in ms; 0 turns the cache off. */
  readonly maxTtlMs: number;
}

export class TokenCache {
  private readonly entries: TtlMap<VerifiedIdentity> | undefined;
  private readonly maxTtlMs: number;

  constructor(options: TokenCacheOptions) {
    this.maxTtlMs = options.maxTtlMs;
    this.entries = options.maxEntries > 0 && options.maxTtlMs > 0 ? new TtlMap(options.maxEntries) : undefined;
  }

  get size(): number {
    return this.entries?.size ?? 0;
  }

  get(token: string, scope: string, now = Date.now()): VerifiedIdentity | undefined {
    return this.entries?.get(cacheKey(token, scope), now);
  }

  /**
   * Remembers a verified token until min(exp, now + maxTtl). `exp` is in seconds, as in the
   * token. A token that is already past exp (accepted within the clock tolerance) is not
   * remembered at all: a cached entry is never served past exp.
   */
  set(token: string, scope: string, identity: VerifiedIdentity, expSeconds: number | undefined, now = Date.now()): void {
    if (!this.entries) return;
    const expiresAt = Math.min(expSeconds === undefined ? Infinity : expSeconds * 1000, now + this.maxTtlMs);
    if (expiresAt <= now) return;
    this.entries.set(cacheKey(token, scope), identity, expiresAt - now, now);
  }

  clear(): void {
    this.entries?.clear();
  }
}

function cacheKey(token: string, scope: string): string {
  // The digest has a fixed alphabet and length, so the scope after it cannot blur the boundary.
  // crypto.hash, one call, is cheaper than a Hash object per lookup, and this runs on every request.
  return `${hash('sha256', token, 'base64url')} ${scope}`;
}
