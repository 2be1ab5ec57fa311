/**
 * `listen.cors`: how the gateway answers browsers on another origin (CORS preflights and the
 * `Access-Control-*` headers of every answer). Which origins is not a setting of its own: it is
 * the Origin check's allow-list (`listen.allowedOrigins`, the publicUrl origin and, on a
 * loopback publicUrl, loopback origins), so CORS can never admit an origin that check refuses.
 */
import { z } from 'zod';
import { durationSchema } from '../units.js';

/** Request headers an MCP client sends, so every preflight allows them (Streamable HTTP, both eras). */
export const CORS_REQUEST_HEADERS: readonly string[] = [
  'Content-Type',
  'Accept',
  // Never covered by a `*` wildcard (Fetch), so it is always named.
  'Authorization',
  'Mcp-Session-Id',
  'MCP-Protocol-Version',
  'Mcp-Method',
  'Mcp-Name',
  'Last-Event-ID',
  // W3C trace context: read by tracing (src/tracing/propagation.ts) and passed to the backend.
  'traceparent',
  'tracestate',
  // A client's own request id is taken and echoed (src/listener/listener.ts).
  'X-Request-Id',
];

/** Response headers a browser client must read; past the CORS-safelisted ones, script sees only these. */
export const CORS_EXPOSED_HEADERS: readonly string[] = ['Mcp-Session-Id', 'MCP-Protocol-Version', 'WWW-Authenticate', 'Retry-After', 'X-Request-Id'];

export const CORS_METHODS: readonly string[] = ['GET', 'POST', 'DELETE'];

const HEADER_NAME = /^[A-Za-z0-9!#$%&'+.^_`|~-]+$/;

/** A header name, lowercased; `*` is refused: a wildcard would say more than the list it replaces. */
const headerNameSchema = z
  .string()
  .refine((v) => HEADER_NAME.test(v), { error: 'expected an HTTP header name (no `*`: name each header)' })
  .transform((v) => v.toLowerCase());

/** Chromium caps a cached preflight at 2 hours, Firefox at 24; longer would only mislead. */
const MAX_AGE_LIMIT_MS = 24 * 60 * 60 * 1000;

const noCorsSchema = z
  .strictObject({
    mode: z
      .literal('none')
      .describe(
        'No CORS: preflights reach the mcp stage (405) and no Access-Control-* header is added. For a gateway ' +
          'behind an ingress that answers CORS itself; the backend\'s own Access-Control-* headers are relayed untouched.',
      ),
  })
  .describe('CORS off.');

const allowedOriginsCorsSchema = z
  .strictObject({
    mode: z
      .literal('allowed-origins')
      .describe(
        'CORS for exactly the origins the Origin check admits (the default). A preflight from one is answered 204 ' +
          'by the gateway before authentication (a preflight carries no token) and never forwarded; one from any ' +
          'other origin gets 403 and no Access-Control-* header. Every answer to an admitted origin, the gateway\'s own ' +
          'errors and the protected-resource metadata included, carries Access-Control-Allow-Origin naming it (never `*`, and never ' +
          'Access-Control-Allow-Credentials: tokens travel in Authorization, not cookies); every answer carries ' +
          'Vary: Origin; the backend\'s own Access-Control-* headers are replaced.',
      ),
    allowedHeaders: z
      .array(headerNameSchema)
      .prefault([])
      .describe(`Request headers allowed in addition to the ones MCP clients send, which are always allowed: ${CORS_REQUEST_HEADERS.join(', ')}.`),
    exposedHeaders: z
      .array(headerNameSchema)
      .prefault([])
      .describe(`Response headers browser scripts may read in addition to the ones MCP clients read, which are always exposed: ${CORS_EXPOSED_HEADERS.join(', ')}.`),
    maxAge: durationSchema()
      .prefault('10m')
      .refine((ms) => ms <= MAX_AGE_LIMIT_MS, { error: 'at most 24h (browsers cap it lower still)' })
      .describe('How long a browser may cache a preflight answer (Access-Control-Max-Age, in whole seconds).'),
  })
  .describe('CORS on, for the origins the Origin check admits.');

export const corsSchema = z
  .discriminatedUnion('mode', [noCorsSchema, allowedOriginsCorsSchema])
  .describe(
    'CORS for browser-based clients on another origin (docs/security.md, "Browsers, Host and Origin"): ' +
      `preflights allow the methods ${CORS_METHODS.join(', ')}.`,
  );

export type CorsConfig = z.output<typeof corsSchema>;
export type AllowedOriginsCorsConfig = Extract<CorsConfig, { mode: 'allowed-origins' }>;
