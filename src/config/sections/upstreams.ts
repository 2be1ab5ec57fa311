/** `upstreams`: named groups of interchangeable MCP server instances and how to reach them. */
import { z } from 'zod';
import { TOKEN68 } from '../../mcp/headers.js';
import { durationSchema } from '../units.js';
import { backgroundCallsSchema } from './background-calls.js';
import { tokenExchangeSchema } from './token-exchange.js';

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

/**
 * Header names the gateway must own on the way upstream: an identity header may not shadow
 * one of them, or it would break the request or be overwritten.
 */
const RESERVED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'host',
  'connection',
  'content-length',
  'content-type',
  'transfer-encoding',
  'te',
  'upgrade',
  'keep-alive',
  'accept',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-request-id',
  'last-event-id',
]);
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

const identityHeaderSchema = z
  .string()
  .transform((name) => name.toLowerCase())
  .refine((name) => HEADER_NAME.test(name), { error: 'expected an HTTP header name' })
  .refine((name) => !RESERVED_HEADERS.has(name) && !name.startsWith('mcp-'), {
    error: 'this header is set by the gateway or the MCP transport; pick another name',
  });

const identityHeadersSchema = z
  .strictObject({
    subject: identityHeaderSchema.prefault('x-taskgate-subject').describe('Header carrying the subject.'),
    issuer: identityHeaderSchema.prefault('x-taskgate-issuer').describe('Header carrying the issuer.'),
    tenant: identityHeaderSchema.prefault('x-taskgate-tenant').describe('Header carrying the tenant, when the principal has one.'),
    clientId: identityHeaderSchema.prefault('x-taskgate-client-id').describe('Header carrying the OAuth client id, when known.'),
    scopes: identityHeaderSchema.prefault('x-taskgate-scopes').describe('Header carrying the granted scopes, space-delimited.'),
  })
  .superRefine((headers, ctx) => {
    const seen = new Map<string, string>();
    for (const [field, name] of Object.entries(headers)) {
      const first = seen.get(name);
      if (first === undefined) seen.set(name, field);
      else ctx.addIssue({ code: 'custom', path: [field], message: `same header as ${first}` });
    }
  })
  .describe('Names of the identity headers (values are percent-encoded when they are not plain printable ASCII).');

const credentialsSchema = z
  .discriminatedUnion('type', [
    z
      .strictObject({ type: z.literal('none').describe('Nothing is added.') })
      .describe('No credentials: the upstream sits on a trusted network.'),
    z
      .strictObject({
        type: z.literal('bearer').describe('A static bearer token of the gateway\'s own.'),
        token: z
          .string()
          .regex(TOKEN68, { error: 'expected a bearer token (token68: letters, digits, "-._~+/", then "=" padding)' })
          .describe('The token, normally "${NAME}" from the environment; never logged.'),
      })
      .describe('The gateway authenticates itself to the upstream with its own token, never the client\'s.'),
    z
      .strictObject({
        type: z.literal('identity-headers').describe('The verified principal is passed in headers.'),
        headers: identityHeadersSchema.prefault({}),
      })
      .describe('The verified principal travels in headers that clients can never set themselves. Needs auth.mode jwt.'),
    tokenExchangeSchema,
  ])
  .prefault({ type: 'none' })
  .describe(
    'What the gateway sends to prove who is calling. The client\'s Authorization header is never forwarded, ' +
      'and identity headers arriving from clients are always removed.',
  );

const TOOL_NAME = z.string().min(1).max(128);

const providedTasksSchema = z
  .strictObject({
    tools: z
      .union([z.literal('all'), z.array(TOOL_NAME).min(1)])
      .describe('The tools the gateway runs as tasks: "all", or a list of tool names.'),
    promoteAfter: durationSchema()
      .prefault('2s')
      .describe(
        '2026-07-28: a call of a listed tool from a client that declared the tasks extension becomes a task ' +
          'once it has run this long without an answer; a faster answer goes back as a plain result.',
      ),
    timeout: durationSchema()
      .prefault('10m')
      .describe(
        'Longest backend time of a task the gateway runs: all its calls together, with the pauses before calls a ' +
          '2026-07-28 backend asks to have made again (the time a client takes to answer input does not count). ' +
          'Past it (or past the task\'s TTL, if sooner) the task ends failed, saying so.',
      ),
  })
  .describe(
    'Tasks the gateway runs itself for a backend that has none (docs/provided-tasks.md): it holds the plain ' +
      'tools/call and serves the task lifecycle. A tool the backend itself offers as a task stays a backend task.',
  );

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
    credentials: credentialsSchema,
    providedTasks: providedTasksSchema.optional(),
    backgroundCalls: backgroundCallsSchema.optional(),
    bridge: z
      .enum(['auto', 'off'])
      .default('auto')
      .describe(
        'Bridging of the two task generations (docs/bridging.md): with auto, a client of one generation gets tasks ' +
          'from a backend that serves only the other, where the gateway has learnt for certain what the backend ' +
          'serves (server/discover, initialize, tools/list); off relays task traffic only in its own generation.',
      ),
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
