/**
 * node:http in front of a fetch-shaped handler (the SDK 2.x server's entry, createMcpHandler's
 * fetch), for the test backends built on it: the request as a fetch Request, aborted when the
 * client goes away, and the Response written back, streams included.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';

/** Serves `req` with `handler`; `body` when the caller has read it already (to record it). */
export async function serveFetch(req: IncomingMessage, res: ServerResponse, handler: (request: Request) => Promise<Response>, body?: string): Promise<void> {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const disconnect = new AbortController();
  res.on('close', () => disconnect.abort());
  const content = body ?? (req.method === 'POST' ? await text(req) : undefined);
  const response = await handler(new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`), { method: req.method, headers, body: content, signal: disconnect.signal }));
  const out: Record<string, string> = {};
  response.headers.forEach((value, key) => (out[key] = value));
  res.writeHead(response.status, out);
  if (response.body === null) return void res.end();
  // A client that went away mid-stream: the disconnect signal has already ended the exchange.
  await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res).catch(() => undefined);
}
