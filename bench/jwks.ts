/**
 * A local authorization server for the bearer-token scenarios: an ES256 key made for this run,
 * a JWKS endpoint on loopback (node:http) for taskgate to fetch, and tokens minted with jose.
 * It runs inside the harness: taskgate fetches the key set once and then verifies locally.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export interface BenchIssuer {
  readonly issuer: string;
  readonly jwksUri: string;
  /** A token for `subject`, valid for an hour, for the audience of the gateway's route at `path` (/mcp). */
  mint(subject: string, path?: string): Promise<string>;
  close(): Promise<void>;
}

/** The canonical resource URI of the /mcp route with publicUrl http://127.0.0.1 (the default audience). */
export const AUDIENCE = 'http://127.0.0.1/mcp';

export async function startIssuer(): Promise<BenchIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const kid = 'bench-key';
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const body = JSON.stringify({ keys: [jwk] });
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const issuer = 'https://issuer.bench.taskgate.test';
  return {
    issuer,
    jwksUri: `http://127.0.0.1:${port}/jwks.json`,
    mint: (subject, path = '/mcp') =>
      new SignJWT({ sub: subject, aud: path === '/mcp' ? AUDIENCE : `http://127.0.0.1${path}`, scope: 'mcp' })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setIssuer(issuer)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
