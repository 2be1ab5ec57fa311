/**
 * A real backend, made slow or made to misbehave: a plain HTTP forwarder in front of an
 * example server that can hold chosen JSON-RPC requests back before passing them on, change
 * a request body on its way (a backend that acts as if the client had said something else),
 * add headers to its answers, and keep every answer it relayed (what the backend really sent
 * to the gateway).
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';

export interface BackendProxyOptions {
  /** How long to hold a POSTed message of this JSON-RPC method (undefined for a response or a GET). */
  delayFor?(rpcMethod: string | undefined): number;
  /** The body the backend gets instead, given the parsed JSON-RPC message (return it unchanged to keep it). */
  rewriteRequest?(message: Record<string, unknown>): Record<string, unknown>;
  /** Headers added to (or replacing) every answer's: a backend that sets them itself, such as its own CORS. */
  responseHeaders?: Record<string, string>;
}

export interface BackendProxy {
  /** The backend's endpoint URL, through the proxy. */
  url: string;
  /** Everything the backend answered through the proxy, streams included, as text. */
  relayed(): string;
  close(): Promise<void>;
}

export async function startBackendProxy(backendUrl: string, options: BackendProxyOptions = {}): Promise<BackendProxy> {
  const backend = new URL(backendUrl);
  let relayed = '';
  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let body = await buffer(req);
    const message = parseMessage(body);
    const delay = options.delayFor?.(typeof message?.method === 'string' ? message.method : undefined) ?? 0;
    if (delay > 0) await sleep(delay);
    if (message && options.rewriteRequest) body = Buffer.from(JSON.stringify(options.rewriteRequest(message)));
    const headers = { ...req.headers, host: backend.host, ...(req.method === 'POST' ? { 'content-length': String(body.length) } : {}) };
    const upstream = httpRequest({ host: backend.hostname, port: backend.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, ...options.responseHeaders });
      answer.on('data', (chunk: Buffer) => (relayed += chunk.toString('utf8')));
      answer.pipe(res);
    });
    // A client that goes away ends the backend request too, as the gateway's own would.
    res.once('close', () => upstream.destroy());
    upstream.once('error', () => res.destroy());
    upstream.end(body);
  };
  const server = createServer((req, res) => {
    forward(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${backend.pathname}`,
    relayed: () => relayed,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parseMessage(body: Buffer): Record<string, unknown> | undefined {
  try {
    const message: unknown = JSON.parse(body.toString('utf8'));
    return typeof message === 'object' && message !== null && !Array.isArray(message) ? (message as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
