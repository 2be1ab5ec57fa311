/** `upstreams`: named groups of interchangeable MCP server instances and how to reach them. */
import { z } from 'zod';
import { durationSchema } from '../units.js';

/**
 * Names show up in routes, logs and metric labels, so they are kept to characters that need
 * no quoting anywhere.
 */
export const UPSTREAM_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Why a URL is not an instance base URL, or undefined if it is one. */
function instanceUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'expected an absolute http(s) URL such as http://10.0.0.5:3000';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'expected an http or https URL';
  // Credentials belong in the upstream credentials section, which keeps them out of logs.
  if (url.username || url.password) return 'must not contain credentials';
  if (url.pathname !== '/' || url.search || url.hash) {
    return 'expected an origin only (scheme://host[:port]); put the path in the route\'s upstreamPath';
  }
  return undefined;
}

const instanceSchema = z
  .string()
  .superRefine((value, ctx) => {
    const problem = instanceUrlProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  // Normalized so `http://a:3000/` and `http://A:3000` count as the same instance.
  .transform((value) => new URL(value).origin);

const timeoutsSchema = z
  .strictObject({
    connect: durationSchema().prefault('5s').describe('Time allowed to open a TCP (and TLS) connection to an instance.'),
    headers: durationSchema()
      .prefault('30s')
      .describe('Time from sending the request until the upstream response headers arrive.'),
    body: durationSchema()
      .prefault('5m')
      .describe(
        'Longest idle gap between two chunks of the upstream response body; 0s means no limit. ' +
          'SSE streams may stay quiet for a long time, so keep this generous.',
      ),
  })
  .describe('Upstream timeouts.');

export const upstreamSchema = z
  .strictObject({
    instances: z
      .array(instanceSchema)
      .min(1)
      .superRefine((origins, ctx) => {
        const seen = new Map<string, number>();
        origins.forEach((origin, index) => {
          const first = seen.get(origin);
          if (first === undefined) seen.set(origin, index);
          else ctx.addIssue({ code: 'custom', path: [index], message: `duplicate of instance [${first}]` });
        });
      })
      .describe('Base URLs (origin only, no path) of the interchangeable instances of this upstream; at least one, each once.'),
    timeouts: timeoutsSchema.prefault({}),
    cooldown: durationSchema()
      .prefault('10s')
      .describe('How long an instance that refused a connection is skipped before it is tried again.'),
    connections: z.int().min(1).default(128).describe('Keep-alive connections kept per instance.'),
  })
  .describe('An upstream: one MCP server, possibly run as several instances.');

const NAME_HINT = 'an upstream name is 1-64 letters, digits, "-" and "_", starting with a letter or digit';

export const upstreamsSchema = z
  .record(z.string(), upstreamSchema)
  // Names are checked here rather than by a key schema, because zod skips the value of a key
  // that fails its schema, and `when` lets this run even where a value failed: both problems
  // of `bad.name: { instances: [] }` are reported in one go.
  .superRefine(
    (upstreams, ctx) => {
      const names = Object.keys(upstreams);
      if (names.length === 0) ctx.addIssue({ code: 'custom', message: 'at least one upstream is required' });
      for (const name of names) {
        if (!UPSTREAM_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: NAME_HINT, params: { atKey: true } });
      }
    },
    { when: ({ value }) => typeof value === 'object' && value !== null && !Array.isArray(value) },
  )
  .meta({ propertyNames: { type: 'string', pattern: UPSTREAM_NAME.source }, minProperties: 1 })
  .describe('The MCP servers behind the gateway, by name. Routes refer to them by that name.');
