/**
 * Where an issuer's public keys come from: a local JWKS file read once, or a remote JWKS that
 * jose fetches, caches, refreshes after `maxAge` and refetches (at most once per `cooldown`)
 * when a token names an unknown `kid`, which is how key rotation is picked up.
 *
 * Around jose's remote set this adds what a gateway needs on top:
 * - the first fetch is made in the background, retried with backoff, and never throws, so an
 *   unreachable identity provider at start does not crash the gateway; until it succeeds
 *   requests are refused with 503 without each of them trying to fetch;
 * - every fetch is seen (jose's `customFetch` hook), so "the keys could not be fetched" is told
 *   apart from "the token is bad", and counted;
 * - a failed refresh keeps serving the last good set (stale-if-error): an identity provider
 *   outage does not lock out tokens signed with keys already known, while tokens naming an
 *   unknown `kid` get 503 (not 401) until a fetch succeeds again.
 */
import { readFile } from 'node:fs/promises';
import { createLocalJWKSet, createRemoteJWKSet, customFetch, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';

/** The keys cannot be had right now: a 503, never a verdict on the token. Local, never sent. */
export class KeysUnavailableError extends Error {
  override readonly name = 'KeysUnavailableError';
}

export interface KeySet {
  /** The resolver jwtVerify calls. */
  readonly getKey: JWTVerifyGetKey;
  /** Keys have been loaded at least once. */
  readonly ready: boolean;
  /** Settles when keys are first loaded (a policy reload waits for it before the swap). */
  readonly loaded: Promise<void>;
  /** The latest fetch failed: the keys in use may be stale, so an unknown kid proves nothing. */
  readonly degraded: boolean;
  close(): void;
}

export type RefreshOutcome = 'ok' | 'error';

export interface RemoteKeySetOptions {
  readonly cooldownMs: number;
  readonly maxAgeMs: number;
  readonly timeoutMs: number;
  /** Called after every fetch attempt; `error` is the cause of a failure (for the log). */
  readonly onRefresh?: (outcome: RefreshOutcome, error?: unknown) => void;
}

// Key sets are a few KiB; a bound keeps a misbehaving endpoint from filling memory.
const MAX_JWKS_BYTES = 1024 * 1024;
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 30_000;
const MIN_RETRY_MS = 50;

function isKeySetShape(value: unknown): value is JSONWebKeySet {
  if (typeof value !== 'object' || value === null) return false;
  const keys = (value as { keys?: unknown }).keys;
  return Array.isArray(keys) && keys.every((key) => typeof key === 'object' && key !== null && !Array.isArray(key));
}

class RemoteKeySet implements KeySet {
  private readonly remote: ReturnType<typeof createRemoteJWKSet>;
  private readonly options: RemoteKeySetOptions;
  private readonly retryCapMs: number;
  /** The body of the last good response, replayed to jose when a refresh fails. */
  private lastGood: string | undefined;
  private failing = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryAttempt = 0;
  private closed = false;
  private markLoaded!: () => void;
  readonly loaded = new Promise<void>((resolve) => (this.markLoaded = resolve));

  constructor(url: string, options: RemoteKeySetOptions) {
    this.options = options;
    this.retryCapMs = Math.max(MIN_RETRY_MS, Math.min(options.cooldownMs, MAX_RETRY_MS));
    this.remote = createRemoteJWKSet(new URL(url), {
      cooldownDuration: options.cooldownMs,
      cacheMaxAge: options.maxAgeMs,
      timeoutDuration: options.timeoutMs,
      [customFetch]: (input, init) => this.fetchKeys(input, init),
    });
  }

  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    // Until the first fetch succeeds, requests do not each try to fetch: the background
    // retry does, at a pace the identity provider can bear.
    if (this.lastGood === undefined) throw new KeysUnavailableError('the key set has not been fetched yet');
    return this.remote(header, token);
  };

  get ready(): boolean {
    return this.lastGood !== undefined;
  }

  get degraded(): boolean {
    return this.failing;
  }

  start(): void {
    this.scheduleRetry(0);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private async fetchKeys(url: string, init: RequestInit): Promise<Response> {
    let body: string;
    try {
      const response = await fetch(url, init);
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new Error(`the key set endpoint answered HTTP ${response.status}`);
      }
      body = await response.text();
      if (body.length > MAX_JWKS_BYTES) throw new Error('the key set is larger than 1 MiB');
      if (!isKeySetShape(JSON.parse(body))) throw new Error('the response is not a JSON Web Key Set');
    } catch (error) {
      this.failing = true;
      this.options.onRefresh?.('error', error);
      this.scheduleRetry(this.retryAttempt + 1);
      if (this.lastGood === undefined) throw new KeysUnavailableError('the key set could not be fetched', { cause: error });
      return new Response(this.lastGood, { status: 200 });
    }
    this.lastGood = body;
    this.markLoaded();
    this.failing = false;
    this.retryAttempt = 0;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.options.onRefresh?.('ok');
    return new Response(body, { status: 200 });
  }

  /** Backoff from 250 ms, doubling, capped at the cooldown (at most 30 s). */
  private scheduleRetry(attempt: number): void {
    if (this.closed || this.retryTimer !== undefined) return;
    this.retryAttempt = attempt;
    const delay = attempt === 0 ? 0 : Math.min(this.retryCapMs, FIRST_RETRY_MS * 2 ** (attempt - 1));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      // Failures are counted and logged in fetchKeys, which also schedules the next try.
      this.remote.reload().catch(() => undefined);
    }, delay);
    this.retryTimer.unref();
  }
}

/** A remote key set whose first fetch starts now, in the background. */
export function createRemoteKeySet(url: string, options: RemoteKeySetOptions): KeySet {
  const keySet = new RemoteKeySet(url, options);
  keySet.start();
  return keySet;
}

/** A key set from a local file. Throws (with a reason fit for the operator) if it is unusable. */
export async function loadLocalKeySet(path: string): Promise<KeySet> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? 'not valid JSON';
    throw new Error(`cannot read the key set file (${reason})`, { cause: error });
  }
  if (!isKeySetShape(parsed)) throw new Error('the key set file is not a JSON Web Key Set ({"keys": [...]})');
  const getKey = createLocalJWKSet(parsed);
  return { getKey, ready: true, loaded: Promise.resolve(), degraded: false, close: () => undefined };
}
