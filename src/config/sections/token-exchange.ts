/**
 * `upstreams.*.credentials` of type `token-exchange` (RFC 8693): the gateway trades the
 * client's verified access token at the authorization server for one minted for this
 * upstream (src/auth/token-exchange.ts). A file of its own beside upstreams.ts: the client
 * authentication alone is a union of three.
 */
import { z } from 'zod';
import { durationSchema } from '../units.js';
import { SCOPE_TOKEN } from './routes.js';

function absoluteUrlProblem(value: string, what: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `expected an absolute URL (${what})`;
  }
  if (url.hash) return 'must not contain a fragment';
  if (url.username || url.password) return 'must not contain credentials';
  return undefined;
}

const tokenEndpointSchema = z.string().superRefine((value, ctx) => {
  const problem = absoluteUrlProblem(value, 'the authorization server\'s token endpoint');
  if (problem) return void ctx.addIssue({ code: 'custom', message: problem });
  const url = new URL(value);
  const loopback = url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname === 'localhost';
  // The client's token travels in this request's body: never in the clear off the host.
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    ctx.addIssue({ code: 'custom', message: 'expected https (plain http only on a loopback address): the client\'s token is sent here' });
  }
});

const clientIdSchema = z.string().min(1).describe('The gateway\'s own OAuth client id at the authorization server.');
const secretSchema = z.string().min(1).describe('The client secret, normally "${NAME}" from the environment; never logged.');

const clientSchema = z
  .discriminatedUnion('method', [
    z
      .strictObject({ method: z.literal('client_secret_basic').describe('HTTP Basic with the client id and secret (RFC 6749 §2.3.1).'), id: clientIdSchema, secret: secretSchema })
      .describe('Client secret in the Authorization header.'),
    z
      .strictObject({ method: z.literal('client_secret_post').describe('client_id and client_secret in the request body.'), id: clientIdSchema, secret: secretSchema })
      .describe('Client secret in the form body.'),
    z
      .strictObject({
        method: z.literal('private_key_jwt').describe('A JWT assertion signed with the gateway\'s private key (RFC 7523).'),
        id: clientIdSchema,
        privateKey: z
          .string()
          .includes('-----BEGIN PRIVATE KEY-----', { error: 'expected a PKCS#8 PEM private key ("-----BEGIN PRIVATE KEY-----")' })
          .describe('The PKCS#8 PEM private key, normally "${NAME}" from the environment; never logged.'),
        algorithm: z.enum(['RS256', 'PS256', 'ES256', 'EdDSA']).default('RS256').describe('The assertion\'s signature algorithm; must suit the key.'),
        keyId: z.string().min(1).optional().describe('The kid put in the assertion header, if the server needs one to pick the key.'),
        assertionAudience: z
          .string()
          .min(1)
          .optional()
          .describe('The assertion\'s aud; defaults to the token endpoint URL. Some servers want their issuer identifier.'),
      })
      .describe('A signed client assertion; the key never leaves the gateway.'),
  ])
  .describe('How the gateway authenticates itself at the token endpoint.');

export const tokenExchangeSchema = z
  .strictObject({
    type: z.literal('token-exchange').describe('An RFC 8693 token exchange per principal.'),
    tokenEndpoint: tokenEndpointSchema.describe('The authorization server\'s token endpoint (https; http only on loopback).'),
    audience: z.string().min(1).optional().describe('The `audience` asked for: the logical name of this upstream at the authorization server.'),
    resource: z
      .string()
      .superRefine((value, ctx) => {
        const problem = absoluteUrlProblem(value, 'the upstream\'s resource URI');
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional()
      .describe('The `resource` asked for (RFC 8707): the upstream\'s canonical URI. Set audience, resource or both.'),
    scopes: z
      .array(z.string().regex(SCOPE_TOKEN, { error: 'expected an OAuth scope: printable ASCII without spaces, quotes or backslashes' }))
      .default([])
      .describe('The `scope` asked for, space-joined; empty leaves it to the authorization server.'),
    client: clientSchema,
    timeout: durationSchema()
      .prefault('5s')
      .describe('Longest wait for the token endpoint; then the client is answered 503 and nothing reaches the upstream.'),
    cache: z
      .strictObject({
        maxEntries: z.int().min(0).default(10_000).describe('Most exchanged tokens kept (oldest out); 0 exchanges on every request.'),
        refreshBefore: durationSchema()
          .prefault('30s')
          .describe('An exchanged token is used until this long before its expires_in runs out, then exchanged again.'),
      })
      .prefault({})
      .describe('Exchanged tokens are kept in memory per principal, client, granted scopes and upstream; never logged or shown.'),
  })
  .refine((exchange) => exchange.audience !== undefined || exchange.resource !== undefined, {
    error: 'set audience, resource or both: the exchanged token must be minted for this upstream',
    path: ['audience'],
  })
  .describe(
    'For every request, the client\'s verified access token is exchanged at the authorization server (RFC 8693) for a ' +
      'token minted for this upstream, sent as Authorization: Bearer. Needs auth.mode jwt.',
  );

export type TokenExchangeConfig = z.output<typeof tokenExchangeSchema>;
