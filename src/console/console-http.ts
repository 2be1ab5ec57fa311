/**
 * The HTTP side every console answer shares: the security headers (a strict CSP, no
 * framing, no caching of data, no referrer), the error body, and the page's static assets,
 * read once from src/console/assets (dist/src/console/assets after `npm run build`). Nothing
 * the page loads comes from anywhere but this listener.
 */
import { readdir, readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { FastifyReply } from 'fastify';
import { describeError, GatewayError, toWireError } from '../errors.js';

/** No inline script or style, nothing from elsewhere, no framing, no form posts, no plugins. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function secureHeaders(reply: FastifyReply, cacheable: boolean): void {
  reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-frame-options', 'DENY');
  reply.header('cross-origin-opener-policy', 'same-origin');
  reply.header('cross-origin-resource-policy', 'same-origin');
  reply.header('cache-control', cacheable ? 'no-cache' : 'no-store');
}

export interface ConsoleErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly data?: unknown };
}

/** The console's error answer: the catalogue's code, status and message (docs/errors.md). */
export function errorAnswer(error: unknown): { status: number; headers: Record<string, string>; body: ConsoleErrorBody; known: boolean } {
  const known = toWireError(error);
  const gatewayError = known ?? new GatewayError('TG_ERR_INTERNAL', { cause: error });
  const description = describeError(gatewayError.code);
  return {
    status: description.httpStatus,
    headers: gatewayError.headers,
    body: { error: { code: gatewayError.code, message: gatewayError.message, ...(gatewayError.data === undefined ? {} : { data: gatewayError.data }) } },
    known: known !== undefined,
  };
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
}

/** The page's files by name, read once on first use; only files of a known type are served. */
export class ConsoleAssets {
  private loading: Promise<ReadonlyMap<string, Asset>> | undefined;

  constructor(private readonly directory: URL = new URL('./assets/', import.meta.url)) {}

  async get(name: string): Promise<Asset | undefined> {
    this.loading ??= this.load();
    return (await this.loading).get(name);
  }

  private async load(): Promise<ReadonlyMap<string, Asset>> {
    const assets = new Map<string, Asset>();
    for (const name of await readdir(this.directory)) {
      const contentType = CONTENT_TYPES[extname(name)];
      if (contentType) assets.set(name, { body: await readFile(new URL(name, this.directory)), contentType });
    }
    return assets;
  }
}
