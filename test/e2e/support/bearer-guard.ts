/**
 * A small resource-server front for an example MCP server: it verifies every request's bearer
 * token with jose against the authorization server's JWKS (issuer, audience, expiry,
 * signature), checks the scope it requires, records the verified claims, and only then
 * proxies the request, unchanged but for the Authorization header, to the MCP server. A
 * refusal is the resource server's own 401/403 with its own WWW-Authenticate, which the
 * gateway must never relay to its client.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buffer } from 'node:stream/consumers';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';

export interface GuardOptions {
  /** The MCP server behind the guard, e.g. http://127.0.0.1:PORT/mcp. */
  readonly backendUrl: string;
  readonly issuer: string;
  readonly jwksUri: string;
  /** The audience the tokens must be minted for: this resource. */
  readonly audience: string;
  /** Every scope a token must carry. */
  readonly requiredScopes: readonly string[];
}

export interface VerifiedCall {
  readonly claims: JWTPayload;
  /** The token as received (the tests check it never shows up in a log). */
  readonly token: string;
  /** The JSON-RPC method of a POST, if any. */
  readonly rpcMethod?: string;
}

export interface BearerGuard {
  /** e.g. http://127.0.0.1:PORT/mcp */
  readonly url: string;
  readonly origin: string;
  /** Every request that passed verification. */
  readonly verified: VerifiedCall[];
  /** Requests refused, with the status answered. */
  readonly refusals: number[];
  /** Refuse this many of the next requests with 401, however good their token (a revoked one). */
  refuseNext: number;
  close(): Promise<void>;
}

export async function startBearerGuard(options: GuardOptions): Promise<BearerGuard> {
  const keys = createRemoteJWKSet(new URL(options.jwksUri));
  const backend = new URL(options.backendUrl);
  const verified: VerifiedCall[] = [];
  const refusals: number[] = [];
  const state = { refuseNext: 0 };
  const metadata = `http://backend.invalid/.well-known/oauth-protected-resource`;

  const refuse = (res: ServerResponse, status: 401 | 403, error: string) => {
    refusals.push(status);
    res.writeHead(status, {
      'content-type': 'application/json',
      'www-authenticate': `Bearer error="${error}", resource_metadata="${metadata}"`,
    });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: `backend says ${error}` } }));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await buffer(req);
    const header = req.headers.authorization ?? '';
    if (state.refuseNext > 0) {
      state.refuseNext -= 1;
      return refuse(res, 401, 'invalid_token');
    }
    if (!header.startsWith('Bearer ')) return refuse(res, 401, 'invalid_request');
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(header.slice(7), keys, { issuer: options.issuer, audience: options.audience, typ: 'at+jwt' }));
    } catch {
      return refuse(res, 401, 'invalid_token');
    }
    const granted = new Set(typeof claims.scope === 'string' ? claims.scope.split(' ') : []);
    if (options.requiredScopes.some((s) => !granted.has(s))) return refuse(res, 403, 'insufficient_scope');
    let rpcMethod: string | undefined;
    try {
      const parsed = JSON.parse(body.toString('utf8')) as { method?: unknown };
      if (typeof parsed.method === 'string') rpcMethod = parsed.method;
    } catch {
      // Not JSON (a GET has no body): nothing to record.
    }
    verified.push({ claims, token: header.slice(7), rpcMethod });
    const headers = { ...req.headers, host: backend.host };
    delete headers.authorization;
    const upstream = httpRequest({ host: backend.hostname, port: backend.port, path: req.url, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    upstream.end(body);
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${backend.pathname}`,
    origin: `http://127.0.0.1:${port}`,
    verified,
    refusals,
    get refuseNext() {
      return state.refuseNext;
    },
    set refuseNext(n: number) {
      state.refuseNext = n;
    },
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
