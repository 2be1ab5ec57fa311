/**
 * DNS-rebinding protection the backend can no longer do itself: behind the gateway it sees
 * the gateway's Host, never the client's (WIRE-NOTES: conformance dns-rebinding-protection).
 */
import { GatewayError } from '../errors.js';
import { TtlMap } from '../lifecycle/ttl-map.js';

export interface HostOriginPolicy {
  /** Lower-case hostnames (no port) accepted in the Host header. */
  readonly hosts: ReadonlySet<string>;
  /** Lower-case origins accepted in an Origin header. */
  readonly origins: ReadonlySet<string>;
  /** Whether any http(s) origin on a loopback name is accepted (a gateway published on loopback). */
  readonly loopbackOrigins: boolean;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/**
 * The default Host allow-list is the publicUrl's hostname. A gateway published on a loopback
 * address (a sidecar, a laptop) is reached as localhost, 127.0.0.1 or [::1] interchangeably,
 * so all three are accepted there, with any port, as the MCP SDK does for local servers; a
 * rebinding attack needs a non-loopback name, which stays refused.
 */
export function buildHostOriginPolicy(publicUrl: string, allowedHosts: readonly string[], allowedOrigins: readonly string[]): HostOriginPolicy {
  const url = new URL(publicUrl);
  const publicHost = stripBrackets(url.hostname.toLowerCase());
  const loopback = LOOPBACK_NAMES.includes(publicHost);
  const hosts = allowedHosts.length > 0 ? allowedHosts : loopback ? LOOPBACK_NAMES : [publicHost];
  return {
    hosts: new Set(hosts.map((h) => stripBrackets(h.toLowerCase()))),
    origins: new Set([url.origin.toLowerCase(), ...allowedOrigins.map((o) => o.toLowerCase().replace(/\/$/, ''))]),
    loopbackOrigins: loopback && allowedOrigins.length === 0,
  };
}

/**
 * Host header values seen lately and their hostnames (null: does not parse). A client sends
 * the same Host on every request, and a URL parse costs a few µs of every request's CPU.
 * Clients choose the values, so the memo is capped in entries (oldest out) and only holds
 * values no longer than a DNS name and a port: at most 256 × 300 characters. Pure work, so
 * gateways in one process may share it.
 */
const recentHosts = new TtlMap<string | null>(256);
const MEMO_HOST_LENGTH = 300;

/** Hostname of a Host header value, without port; undefined when it does not parse. */
export function hostnameOf(hostHeader: string): string | undefined {
  if (hostHeader.length > MEMO_HOST_LENGTH) return parseHostname(hostHeader);
  const known = recentHosts.get(hostHeader);
  if (known !== undefined) return known ?? undefined;
  const hostname = parseHostname(hostHeader);
  recentHosts.set(hostHeader, hostname ?? null, Infinity);
  return hostname;
}

function parseHostname(hostHeader: string): string | undefined {
  try {
    // URL does the IPv6-literal and port parsing a hand-written split would get wrong.
    const url = new URL(`http://${hostHeader}`);
    if (url.username || url.password || url.pathname !== '/' || url.search || url.hash) return undefined;
    return stripBrackets(url.hostname.toLowerCase());
  } catch {
    return undefined;
  }
}

export function checkHostAndOrigin(policy: HostOriginPolicy, host: string | undefined, origin: string | undefined): void {
  const hostname = host === undefined ? undefined : hostnameOf(host);
  if (hostname === undefined || !policy.hosts.has(hostname)) {
    throw new GatewayError('TG_ERR_HOST_NOT_ALLOWED');
  }
  if (origin !== undefined && !isOriginAllowed(policy, origin)) {
    throw new GatewayError('TG_ERR_ORIGIN_NOT_ALLOWED');
  }
}

/** The Origin rule alone; CORS (cors.ts) answers exactly the origins it admits. */
export function isOriginAllowed(policy: HostOriginPolicy, origin: string): boolean {
  return policy.origins.has(origin.toLowerCase()) || (policy.loopbackOrigins && isLoopbackOrigin(origin));
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_NAMES.includes(stripBrackets(url.hostname));
  } catch {
    return false;
  }
}

function stripBrackets(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}
