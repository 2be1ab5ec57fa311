/** `routes`: which client-facing path goes to which upstream. */
import { z } from 'zod';

// Paths are matched exactly, so a query or fragment could never match and whitespace is a typo.
const PATH = /^\/[^?#\s]*$/;
const PATH_HINT = 'expected an absolute path starting with "/", without query, fragment or spaces';

export const routeSchema = z
  .strictObject({
    path: z.string().regex(PATH, { error: PATH_HINT }).describe('Client-facing path, matched exactly.'),
    upstream: z.string().min(1).describe('Name of the upstream (a key of upstreams) that serves this path.'),
    upstreamPath: z
      .string()
      .regex(PATH, { error: PATH_HINT })
      .optional()
      .describe('Path on the upstream instances; defaults to path.'),
  })
  // Resolved here so every consumer sees the same upstreamPath and none re-implements the default.
  .transform((route) => ({ ...route, upstreamPath: route.upstreamPath ?? route.path }))
  .describe('A route: one client-facing path served by one upstream.');

export const routesSchema = z
  .array(routeSchema)
  .min(1)
  .describe('Routes from client-facing paths to upstreams; at least one, each path once.');
