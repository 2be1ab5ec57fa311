/**
 * Header rewriting on the way to the upstream and back. reply-from (or, on the direct path,
 * proxy-route's copyRequestHeaders) already drops `connection`, the headers it lists and
 * `transfer-encoding`; the remaining hop-by-hop
 * headers of RFC 9110 §7.6.1 are dropped here, and X-Forwarded-* describe the client.
 * The client's credentials never travel on (src/auth/upstream-credentials.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { applyUpstreamCredentials } from './credentials/credentials-policy.js';
import { replaceRelayedCorsHeaders } from '../listener/cors.js';

const HOP_BY_HOP = ['keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'upgrade'];

/**
 * The client's headers (a copy) made fit for the upstream: the client's Authorization and
 * identity headers go and the route's upstream credentials come; X-Forwarded-* that arrived
 * from the client are kept and extended only when listen.trustProxy says they can be believed.
 */
export function buildUpstreamRequestHeaders(request: FastifyRequest, headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const tg = request.exchange;
  const trustProxy = tg.snapshot.config.listen.trustProxy !== false;
  for (const name of HOP_BY_HOP) delete headers[name];
  // `Expect: 100-continue` was answered by this server (Node sends the 100) before the body was
  // read; the forwarded request carries the whole body, and undici refuses the header outright,
  // which made every such request (curl sends it for bodies over 1 KiB) a 502.
  delete headers.expect;
  applyTaskOverrides(headers, tg.upstreamHeaders);
  applyUpstreamCredentials(headers, tg.route.credentials, tg.principal, tg.upstreamToken);
  const clientAddress = request.socket.remoteAddress ?? '';
  const priorFor = trustProxy ? headers['x-forwarded-for'] : undefined;
  headers['x-forwarded-for'] = priorFor ? `${String(priorFor)}, ${clientAddress}` : clientAddress;
  headers['x-forwarded-proto'] = trustProxy ? (headers['x-forwarded-proto'] ?? request.protocol) : request.protocol;
  headers['x-forwarded-host'] = trustProxy ? (headers['x-forwarded-host'] ?? request.headers.host) : request.headers.host;
  if (!trustProxy) delete headers.forwarded;
  headers['x-request-id'] = request.id;
  return headers;
}

/**
 * The tasks stage sends a task's own session or backend id instead of the client's. Only
 * these names may be overridden, and credentials are applied after, so an override can
 * never carry a credential upstream.
 */
const OVERRIDABLE = new Set(['mcp-session-id', 'mcp-name']);

function applyTaskOverrides(headers: IncomingHttpHeaders, overrides: Record<string, string | null> | undefined): void {
  if (!overrides) return;
  for (const [name, value] of Object.entries(overrides)) {
    if (!OVERRIDABLE.has(name)) continue;
    if (value === null) delete headers[name];
    else headers[name] = value;
  }
}

export function buildClientResponseHeaders(headers: IncomingHttpHeaders, request: FastifyRequest | undefined): IncomingHttpHeaders {
  for (const name of HOP_BY_HOP) delete headers[name];
  delete headers.connection;
  if (request) headers['x-request-id'] = request.id;
  // With CORS on, the gateway's Access-Control-* were set when the request arrived (proxy-route.ts).
  if (request?.exchange.snapshot.cors) replaceRelayedCorsHeaders(headers);
  return headers;
}

/**
 * The client's headers as reply-from copies them for the upstream: without `connection`, the
 * names it lists and `transfer-encoding`. The caller sets Host, length and type for the body it
 * sends; the rest of the hop-by-hop headers go in buildUpstreamRequestHeaders.
 */
export function copyRequestHeaders(incoming: IncomingHttpHeaders): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...incoming };
  const listed = headers.connection;
  if (typeof listed === 'string') {
    for (const name of listed.split(',')) {
      const trimmed = name.trim().toLowerCase();
      if (trimmed) delete headers[trimmed];
    }
  }
  delete headers.connection;
  delete headers['transfer-encoding'];
  return headers;
}
