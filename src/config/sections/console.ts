/**
 * `console`: the operator console on the admin listener (DESIGN.md §13, docs/console.md): a
 * page at /console and an admin API under /console/api/v1, off unless turned on. Operators
 * authenticate with a static bearer token from the environment and/or a JWT from an issuer of
 * their own; each credential carries one of two roles, kept apart: `viewer` reads, `operator`
 * reads and acts (cancels tasks, suspends principals).
 */
import { z } from 'zod';
import { durationSchema } from '../units.js';
import { issuerSchema } from './auth.js';
import { SCOPE_TOKEN } from './routes.js';

export const CONSOLE_ROLES = ['viewer', 'operator'] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

/** A bearer token shorter than this is guessable; `openssl rand -base64 32` gives 44 characters. */
const MIN_TOKEN_LENGTH = 32;
/** RFC 7235 token68, what fits in Authorization: Bearer (as src/auth/bearer-token.ts checks). */
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

const scopeSchema = z.string().regex(SCOPE_TOKEN, { error: 'expected a scope token (printable ASCII, no spaces, quotes or backslashes)' });

const staticTokenSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._@-]{1,64}$/, { error: 'expected 1 to 64 letters, digits, ".", "_", "@" or "-"' })
      .describe('Who holds this token: the name the audit trail records for its actions.'),
    role: z.enum(CONSOLE_ROLES).describe('viewer: reads the console and its API; operator: also cancels tasks and suspends principals.'),
    token: z
      .string()
      .min(MIN_TOKEN_LENGTH, { error: `must be at least ${MIN_TOKEN_LENGTH} characters (openssl rand -base64 32)` })
      .regex(TOKEN68, { error: 'must be usable as a bearer token: letters, digits and -._~+/ (then = padding only)' })
      .describe('The bearer token itself; write it as "${NAME}" so that it comes from the environment (a Kubernetes Secret), never the file.'),
  })
  .describe('A static operator credential, sent as Authorization: Bearer.');

const jwtSchema = z
  .strictObject({
    issuers: z
      .array(issuerSchema)
      .min(1)
      .describe(
        'The authorization servers whose tokens operators use, as auth.issuers[] (each with audiences, which are required here: ' +
          'the console has no route to default them to).',
      ),
    viewerScope: scopeSchema.default('taskgate.console.view').describe('Scope (in the issuer\'s claims.scopes claim, which may name a roles claim) that grants the viewer role.'),
    operatorScope: scopeSchema.default('taskgate.console.operate').describe('Scope that grants the operator role (which includes viewing).'),
  })
  .describe('Operator JWTs, verified with jose against each issuer\'s keys, exactly as client tokens are.');

export const consoleSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Serve the console and its admin API on the admin listener. Off by default: /console answers 404.'),
    tokens: z.array(staticTokenSchema).default([]).describe('Static operator tokens from the environment.'),
    jwt: jwtSchema.optional().describe('Operator JWTs from an issuer of the operators\' own.'),
    principals: z
      .enum(['shown', 'redacted'])
      .default('redacted')
      .describe(
        'shown: the task records of new tasks keep their creator\'s issuer and subject, and the console shows them. ' +
          'redacted (default): records keep only the issuer, and the console shows a principal by its opaque key.',
      ),
    maxScan: z
      .int()
      .min(100)
      .max(100_000)
      .default(5000)
      .describe('Most live tasks one listing reads from the store, in pages of 500 (the listing says when there were more).'),
    maxSuspension: durationSchema().prefault('24h').describe('Longest suspension an operator may set on a principal.'),
  })
  .superRefine((section, ctx) => {
    if (section.enabled && section.tokens.length === 0 && section.jwt === undefined) {
      ctx.addIssue({ code: 'custom', path: ['enabled'], message: 'an enabled console needs operator credentials: tokens, jwt or both' });
    }
    const names = new Map<string, number>();
    section.tokens.forEach((token, index) => {
      const first = names.get(token.name);
      if (first === undefined) names.set(token.name, index);
      else ctx.addIssue({ code: 'custom', path: ['tokens', index, 'name'], message: `duplicate of tokens[${first}].name` });
    });
    section.jwt?.issuers.forEach((issuer, index) => {
      if (issuer.audiences === undefined) ctx.addIssue({ code: 'custom', path: ['jwt', 'issuers', index, 'audiences'], message: 'required for console issuers' });
    });
    if (section.jwt && section.jwt.viewerScope === section.jwt.operatorScope) {
      ctx.addIssue({ code: 'custom', path: ['jwt', 'operatorScope'], message: 'must differ from viewerScope, or every viewer could act' });
    }
  })
  .describe('The operator console on the admin listener (docs/console.md): live tasks, principals, upstreams, reloads; cancel and suspend.');

export type ConsoleConfig = z.output<typeof consoleSchema>;
export type ConsoleJwtConfig = NonNullable<ConsoleConfig['jwt']>;
