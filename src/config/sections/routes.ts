/** `routes`: which client-facing path goes to which upstream. */
import { z } from 'zod';

// Paths are matched exactly, so a query or fragment could never match and whitespace is a typo.
const PATH = /^\/[^?#\s]*$/;
const PATH_HINT = 'expected an absolute path starting with "/", without query, fragment or spaces';

/**
 * RFC 6749 §3.3 scope-token: printable ASCII without space, `"` or `\`. Anything else could
 * never be granted, and could not be quoted into a WWW-Authenticate challenge.
 */
export const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

export const routeSchema = z
  .strictObject({
    path: z.string().regex(PATH, { error: PATH_HINT }).describe('Client-facing path, matched exactly.'),
    upstream: z.string().min(1).describe('Name of the upstream (a key of upstreams) that serves this path.'),
    upstreamPath: z
      .string()
      .regex(PATH, { error: PATH_HINT })
      .optional()
      .describe('Path on the upstream instances; defaults to path.'),
    scopes: z
      .array(z.string().regex(SCOPE_TOKEN, { error: 'expected an OAuth scope: printable ASCII without spaces, quotes or backslashes' }))
      .default([])
      .describe('Scopes a token must carry, all of them, to use this route (403 insufficient_scope otherwise). Needs auth.mode jwt.'),
  })
  // Resolved here so every consumer sees the same upstreamPath and none re-implements the default.
  .transform((route) => ({ ...route, upstreamPath: route.upstreamPath ?? route.path }))
  .describe('A route: one client-facing path served by one upstream.');

export const routesSchema = z
  .array(routeSchema)
  .min(1)
  .describe('Routes from client-facing paths to upstreams; at least one, each path once.');
