/**
 * Header rewriting on the way to the upstream and back. reply-from (or, on the direct path,
 * proxy-route's copyRequestHeaders) already drops `connection`, the headers it lists and
 * `transfer-encoding`; the remaining hop-by-hop
 * headers of RFC 9110 §7.6.1 are dropped here, and X-Forwarded-* describe the client.
 * The client's credentials never travel on (src/auth/upstream-credentials.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { applyUpstreamCredentials, type CredentialsPolicy } from '../auth/upstream-credentials.js';
import { kClientSignal } from './dispatcher.js';

const HOP_BY_HOP = ['keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'upgrade'];

export interface ForwardOptions {
  /** Whether X-Forwarded-* that arrived from the client are kept and extended. */
  readonly trustProxy: boolean;
  /** The client's Authorization and identity headers go; this upstream's credentials come. */
  readonly credentials: CredentialsPolicy;
}

export function buildUpstreamRequestHeaders(request: FastifyRequest, headers: IncomingHttpHeaders, options: ForwardOptions): IncomingHttpHeaders {
  for (const name of HOP_BY_HOP) delete headers[name];
  // `Expect: 100-continue` was answered by this server (Node sends the 100) before the body was
  // read; the forwarded request carries the whole body, and undici refuses the header outright,
  // which made every such request (curl sends it for bodies over 1 KiB) a 502.
  delete headers.expect;
  applyTaskOverrides(headers, request.tg.upstreamHeaders);
  applyUpstreamCredentials(headers, options.credentials, request.tg.principal);
  const clientAddress = request.socket.remoteAddress ?? '';
  const priorFor = options.trustProxy ? headers['x-forwarded-for'] : undefined;
  headers['x-forwarded-for'] = priorFor ? `${String(priorFor)}, ${clientAddress}` : clientAddress;
  headers['x-forwarded-proto'] = options.trustProxy ? (headers['x-forwarded-proto'] ?? request.protocol) : request.protocol;
  headers['x-forwarded-host'] = options.trustProxy ? (headers['x-forwarded-host'] ?? request.headers.host) : request.headers.host;
  if (!options.trustProxy) delete headers.forwarded;
  headers['x-request-id'] = request.id;
  // Carried to UpstreamAgent, which hands it to undici as the request's abort signal.
  (headers as Record<symbol, unknown>)[kClientSignal] = request.tg.abort;
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
  return headers;
}
