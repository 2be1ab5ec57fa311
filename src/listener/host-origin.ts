/**
 * DNS-rebinding protection the backend can no longer do itself: behind the gateway it sees
 * the gateway's Host, never the client's (WIRE-NOTES: conformance dns-rebinding-protection).
 */
import { GatewayError } from '../errors.js';

export interface HostOriginPolicy {
  /** Lower-case hostnames (no port) accepted in the Host header. */
  readonly hosts: ReadonlySet<string>;
  /** Lower-case origins accepted in an Origin header. */
  readonly origins: ReadonlySet<string>;
}

export function buildHostOriginPolicy(publicUrl: string, allowedHosts: readonly string[], allowedOrigins: readonly string[]): HostOriginPolicy {
  const url = new URL(publicUrl);
  const hosts = allowedHosts.length > 0 ? allowedHosts : [url.hostname];
  return {
    hosts: new Set(hosts.map((h) => stripBrackets(h.toLowerCase()))),
    origins: new Set([url.origin.toLowerCase(), ...allowedOrigins.map((o) => o.toLowerCase().replace(/\/$/, ''))]),
  };
}

/** Hostname of a Host header value, without port; undefined when it does not parse. */
export function hostnameOf(hostHeader: string): string | undefined {
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
  if (origin !== undefined && !policy.origins.has(origin.toLowerCase())) {
    throw new GatewayError('TG_ERR_ORIGIN_NOT_ALLOWED');
  }
}

function stripBrackets(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}
