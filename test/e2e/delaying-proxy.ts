/**
 * A slow backend made of a real one: a plain HTTP forwarder in front of an example server
 * that holds chosen JSON-RPC requests back before passing them on. Lets a test keep one
 * request in flight at the backend while another reaches the gateway (an early poll while
 * the forwarded one is still out), without changing what the backend itself says.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface DelayingProxy {
  /** The backend's endpoint URL, through the proxy. */
  url: string;
  close(): Promise<void>;
}

/** `delayFor` gets each POSTed message's JSON-RPC method (undefined for a response or a GET). */
export async function startDelayingProxy(backendUrl: string, delayFor: (rpcMethod: string | undefined) => number): Promise<DelayingProxy> {
  const backend = new URL(backendUrl);
  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const delay = delayFor(methodOf(body));
    if (delay > 0) await sleep(delay);
    const upstream = httpRequest({ host: backend.hostname, port: backend.port, method: req.method, path: req.url, headers: { ...req.headers, host: backend.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
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
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function methodOf(body: Buffer): string | undefined {
  try {
    const message = JSON.parse(body.toString('utf8')) as { method?: unknown };
    return typeof message.method === 'string' ? message.method : undefined;
  } catch {
    return undefined;
  }
}
