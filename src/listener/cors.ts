/**
 * CORS for browser-based clients on another origin (the Inspector's web UI, browser agents):
 * `listen.cors` in the policy, docs/security.md "Browsers, Host and Origin".
 *
 * The origins are the Origin check's (host-origin.ts), never a list of their own: a request
 * from an origin that check refuses is answered 403 before anything here runs, and one it
 * admits gets its own origin back in Access-Control-Allow-Origin. Never `*`, and never
 * Access-Control-Allow-Credentials: the gateway reads no cookies, a browser client sends its
 * token in Authorization, which the allowed request headers name.
 *
 * Written here rather than with @fastify/cors: that plugin answers preflights from a wildcard
 * OPTIONS route of its own (the MCP routes already serve OPTIONS through @fastify/http-proxy)
 * and from options fixed at registration or a delegator of its own, where these rules come
 * from the policy snapshot the request already read; its headers are set once, so a backend's
 * relayed Access-Control-* and Vary would override them; and a refused origin must get the
 * Origin check's 403, not a 204 without allow headers. What remains is a few header values.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { CORS_EXPOSED_HEADERS, CORS_METHODS, CORS_REQUEST_HEADERS, type AllowedOriginsCorsConfig } from '../config/sections/cors.js';
import { isOriginAllowed, type HostOriginPolicy } from './host-origin.js';

/** A preflight (Fetch): OPTIONS naming the method the real request will use, from an origin. */
export function isPreflight(method: string, headers: IncomingHttpHeaders): boolean {
  return method === 'OPTIONS' && headers.origin !== undefined && headers['access-control-request-method'] !== undefined;
}

/** The CORS answers of one policy, built once per snapshot. */
export class CorsRules {
  private readonly exposed: string;
  private readonly preflight: Readonly<Record<string, string>>;

  constructor(
    config: AllowedOriginsCorsConfig,
    private readonly origins: HostOriginPolicy,
  ) {
    this.exposed = joinNames(CORS_EXPOSED_HEADERS, config.exposedHeaders);
    this.preflight = {
      'access-control-allow-methods': CORS_METHODS.join(', '),
      'access-control-allow-headers': joinNames(CORS_REQUEST_HEADERS, config.allowedHeaders),
      'access-control-max-age': String(Math.floor(config.maxAge / 1000)),
    };
  }

  /** Whether `origin` may read answers: exactly when the Origin check admits it. */
  allows(origin: string): boolean {
    return isOriginAllowed(this.origins, origin);
  }

  /**
   * Headers for any answer to a request whose Origin the caller has admitted (or that has
   * none): every answer varies by Origin, whether or not this one carried it, so a cache never
   * hands one origin's answer to another.
   */
  answerHeaders(admittedOrigin: string | undefined): Record<string, string> {
    if (admittedOrigin === undefined) return { vary: 'Origin' };
    return { vary: 'Origin', 'access-control-allow-origin': admittedOrigin, 'access-control-expose-headers': this.exposed };
  }

  /**
   * The 204 answer to a preflight from an admitted origin. The lists are the policy's, whatever
   * the preflight asked: the browser compares them with what it wants to send.
   */
  preflightHeaders(admittedOrigin: string): Record<string, string> {
    return { ...this.answerHeaders(admittedOrigin), ...this.preflight };
  }
}

/**
 * A backend's answer on its way to a browser: the gateway's Access-Control-* stand (set on the
 * reply when the request arrived), so the backend's go, whatever origins it would admit; and
 * its Vary keeps Origin in it.
 */
export function replaceRelayedCorsHeaders(headers: IncomingHttpHeaders): void {
  for (const name of Object.keys(headers)) {
    if (name.startsWith('access-control-')) delete headers[name];
  }
  headers.vary = varyWithOrigin(headers.vary);
}

function varyWithOrigin(vary: string | string[] | undefined): string {
  const names = (Array.isArray(vary) ? vary.join(',') : (vary ?? ''))
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.includes('*') || names.some((name) => name.toLowerCase() === 'origin')) return names.join(', ');
  return [...names, 'Origin'].join(', ');
}

/** Built-in names first, then the policy's extras not already among them (case-insensitive). */
function joinNames(builtIn: readonly string[], extra: readonly string[]): string {
  const seen = new Set(builtIn.map((name) => name.toLowerCase()));
  return [...builtIn, ...extra.filter((name) => !seen.has(name) && seen.add(name))].join(', ');
}
