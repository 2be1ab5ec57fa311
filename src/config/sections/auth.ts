/**
 * `auth`: how clients prove who they are. Either not at all (`mode: none`, an explicit
 * choice) or with OAuth access tokens that are JWTs, verified against each trusted issuer's
 * published keys (`mode: jwt`). docs/security.md explains the trust model.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { durationSchema } from '../units.js';
import { isObject } from '../../mcp/json.js';

/**
 * Asymmetric algorithms only. `none` would accept unsigned tokens, and an HMAC algorithm
 * would need a secret shared with the issuer; worse, with a public key mistaken for an HMAC
 * secret, anyone could sign tokens (the classic algorithm-confusion attack).
 */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
export const DEFAULT_JWT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;

const algorithmSchema = z.enum(JWT_ALGORITHMS, {
  error: (issue) =>
    typeof issue.input === 'string' && /^(none|HS\d+)$/i.test(issue.input)
      ? 'refused: "none" and the HMAC algorithms (HS*) are never accepted, only asymmetric signatures'
      : `expected one of ${JWT_ALGORITHMS.join(', ')}`,
});

// Claim names are looked up at the top level of the token's payload, as written (no dotted
// paths: namespaced claims such as "https://example.com/tenant" contain dots themselves).
const claimNameSchema = z.string().min(1);

const LOOPBACK_HOSTNAMES = new Set(['localhost', '[::1]']);

function jwksUriProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'expected an absolute https URL';
  }
  if (url.username || url.password) return 'must not contain credentials';
  if (url.protocol === 'https:') return undefined;
  // Keys fetched over plain HTTP could be swapped by anyone on the path, which would let them
  // mint tokens; only a loopback address (a sidecar identity provider, tests) is exempt.
  const loopback = LOOPBACK_HOSTNAMES.has(url.hostname) || (isIP(url.hostname) === 4 && url.hostname.startsWith('127.'));
  if (url.protocol === 'http:' && loopback) return undefined;
  return 'expected an https URL (plain http only for a loopback address)';
}

const jwksUriSchema = z.string().superRefine((value, ctx) => {
  const problem = jwksUriProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const claimsSchema = z
  .strictObject({
    subject: claimNameSchema.default('sub').describe('Claim holding the subject; a token without it (or with a non-string value) is refused.'),
    tenant: claimNameSchema
      .optional()
      .describe('Claim holding the tenant (for example tid), if the issuer has tenants; unset means principals carry no tenant.'),
    clientId: claimNameSchema
      .default('client_id')
      .describe('Claim holding the OAuth client id; when it is absent, azp is used instead.'),
    scopes: claimNameSchema
      .default('scope')
      .describe('Claim holding the granted scopes: a space-delimited string (scope) or an array of strings (such as scp).'),
  })
  .describe(
    'Which token claims make up the principal. The claim names are part of the principal key: changing one (by a reload ' +
      'or otherwise) gives the principals new keys, so their earlier tasks answer not-found rather than pass to whoever ' +
      'the new claim names (docs/security.md).',
  );

const jwksSchema = z
  .strictObject({
    cooldown: durationSchema()
      .prefault('30s')
      .describe('Least time between two fetches of the key set; a token with an unknown kid triggers a refetch only after it.'),
    maxAge: durationSchema().prefault('10m').describe('How long a fetched key set is used before it is fetched again.'),
    timeout: durationSchema()
      .prefault('5s')
      .refine((ms) => ms > 0, { error: 'must be more than 0s' })
      .describe('Time allowed for one fetch of the key set.'),
  })
  .describe('Caching and fetching of a remote key set (jwksUri).');

export const issuerSchema = z
  .strictObject({
    issuer: z
      .string()
      .min(1)
      .describe('The exact iss value of this authorization server\'s tokens; listed in the protected-resource metadata.'),
    jwksUri: jwksUriSchema
      .optional()
      .describe('URL of the issuer\'s JSON Web Key Set (https; http only on loopback). Exactly one of jwksUri and jwksFile.'),
    jwksFile: z
      .string()
      .min(1)
      .optional()
      .describe('Path of a local JSON Web Key Set file, read at start and again on every policy reload. Exactly one of jwksUri and jwksFile.'),
    audiences: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'Accepted aud values, for every route. Default: the route\'s canonical resource URI (publicUrl + route path, ' +
          'no trailing slash), so a token for one route is refused on another.',
      ),
    algorithms: z
      .array(algorithmSchema)
      .min(1)
      .default([...DEFAULT_JWT_ALGORITHMS])
      .describe('Signature algorithms accepted from this issuer; none and HS* are refused.'),
    clockTolerance: durationSchema().prefault('30s').describe('Clock skew allowed when checking exp, nbf and iat.'),
    claims: claimsSchema.prefault({}),
    jwks: jwksSchema.prefault({}),
  })
  // `when` lets these checks run even where a field failed, so one run reports everything.
  .superRefine(
    (issuer, ctx) => {
      const sources = [issuer.jwksUri, issuer.jwksFile].filter((s) => s !== undefined).length;
      if (sources !== 1) {
        ctx.addIssue({ code: 'custom', message: sources === 0 ? 'needs a key source: jwksUri or jwksFile' : 'give jwksUri or jwksFile, not both' });
      }
    },
    { when: ({ value }) => isObject(value) },
  )
  .describe('A trusted authorization server.');

const noAuthSchema = z
  .strictObject({
    mode: z.literal('none').describe('No authentication: every client reaches the upstreams anonymously (logged as a warning at start).'),
  })
  .describe('Running without authentication, chosen explicitly.');

const jwtAuthSchema = z
  .strictObject({
    mode: z.literal('jwt').describe('Every request must carry Authorization: Bearer with a JWT access token from one of the issuers.'),
    issuers: z
      .array(issuerSchema)
      .min(1)
      .superRefine(
        (issuers, ctx) => {
          const seen = new Map<string, number>();
          issuers.forEach((issuer: unknown, index) => {
            // Items may be half-parsed here (see `when`); only a string issuer can collide.
            const id = isObject(issuer) ? issuer.issuer : undefined;
            if (typeof id !== 'string') return;
            const first = seen.get(id);
            if (first === undefined) seen.set(id, index);
            else ctx.addIssue({ code: 'custom', path: [index, 'issuer'], message: `duplicate of issuers[${first}].issuer` });
          });
        },
        { when: ({ value }) => Array.isArray(value) },
      )
      .describe('The trusted authorization servers; a token\'s iss picks one of them, each iss once.'),
    principalKey: z
      .strictObject({
        includeClientId: z
          .boolean()
          .default(false)
          .describe('Whether the OAuth client is part of the principal: true keeps one user\'s tasks apart per client application.'),
        includeTenant: z.boolean().default(true).describe('Whether the tenant claim is part of the principal.'),
      })
      .prefault({})
      .describe('What identifies a principal for task ownership (always issuer and subject).'),
    tokenCache: z
      .strictObject({
        maxEntries: z.int().min(0).default(10_000).describe('Most verified tokens remembered; 0 turns the cache off.'),
        maxTtl: durationSchema()
          .prefault('5m')
          .describe('Longest a verified token is remembered (never past its exp); 0s turns the cache off.'),
      })
      .prefault({})
      .describe('Verified tokens are remembered so that a client polling with one token pays for one signature check.'),
  })
  .describe('OAuth 2.1 resource server: JWT access tokens verified with jose against each issuer\'s keys.');

export const authSchema = z
  .discriminatedUnion('mode', [noAuthSchema, jwtAuthSchema])
  .describe('How clients authenticate. Required, so that running without authentication is always a written choice.');

export type AuthConfig = z.output<typeof authSchema>;
export type JwtAuthConfig = Extract<AuthConfig, { mode: 'jwt' }>;
export type IssuerConfig = JwtAuthConfig['issuers'][number];
