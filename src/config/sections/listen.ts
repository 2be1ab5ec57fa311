/** `listen`: the client-facing listener, what it accepts in Host, Origin and X-Forwarded-*, and how it answers browsers (CORS). */
import { isIP } from 'node:net';
import { z } from 'zod';
import { corsSchema } from './cors.js';

// Underscores are not valid in DNS names but do occur in container and compose service names.
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;
const ORIGIN = /^([a-z][a-z0-9+.-]*):\/\/([^/?#@\s]+)$/i;

function isHostnameOrIp(value: string): boolean {
  return isIP(value) !== 0 || HOSTNAME.test(value);
}

/** An address to bind: an IP literal (IPv6 unbracketed, as node:net wants it) or a hostname. */
export const bindHostSchema = z
  .string()
  .refine(isHostnameOrIp, { error: 'expected an IP address (IPv6 without brackets) or a hostname' });

export const portSchema = z.int().min(0).max(65535);

/** Host headers carry IPv6 literals in brackets, so that is the form compared against. */
const allowedHostSchema = z
  .string()
  .refine((v) => HOSTNAME.test(v) || isIP(v) === 4 || (v.startsWith('[') && v.endsWith(']') && isIP(v.slice(1, -1)) === 6), {
    error: 'expected a hostname without port (IPv6 in brackets, like [::1])',
  })
  .transform((v) => v.toLowerCase());

/**
 * Browsers send the serialized origin: lowercase, no default port, no path. Normalizing here
 * lets the listener compare with a plain string equality.
 */
const allowedOriginSchema = z
  .string()
  .refine((v) => ORIGIN.test(v), { error: 'expected an origin: scheme://host[:port], no path, query or trailing slash' })
  .transform((v) => {
    const scheme = v.slice(0, v.indexOf(':')).toLowerCase();
    if (scheme === 'http' || scheme === 'https') return new URL(v).origin;
    return v.toLowerCase();
  });

function isAddressOrCidr(value: string): boolean {
  const slash = value.indexOf('/');
  if (slash === -1) return isIP(value) !== 0;
  const family = isIP(value.slice(0, slash));
  const prefix = value.slice(slash + 1);
  if (family === 0 || !/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

export const listenSchema = z
  .strictObject({
    host: bindHostSchema.default('0.0.0.0').describe('Address the client-facing listener binds to.'),
    port: portSchema.default(8080).describe('Port of the client-facing listener; 0 picks any free port.'),
    allowedHosts: z
      .array(allowedHostSchema)
      .prefault([])
      .describe(
        'Hostnames (no port) accepted in the Host header, compared case-insensitively with the port ignored. ' +
          'Empty means only the hostname of publicUrl, or, when publicUrl is on loopback, any of localhost, ' +
          '127.0.0.1 and ::1. Guards against DNS rebinding.',
      ),
    allowedOrigins: z
      .array(allowedOriginSchema)
      .prefault([])
      .describe(
        'Origins (scheme://host[:port]) accepted in an Origin header, in addition to the origin of publicUrl, ' +
          'which is always allowed. Empty with a loopback publicUrl also allows any http(s) origin on a loopback ' +
          'name. Requests without an Origin header are allowed.',
      ),
    cors: corsSchema.prefault({ mode: 'allowed-origins' }),
    trustProxy: z
      .union([
        z.boolean(),
        z.array(z.string().refine(isAddressOrCidr, { error: 'expected an IP address or a CIDR range' })),
      ])
      .prefault(false)
      .describe(
        'Whether X-Forwarded-* headers from the client are trusted: true trusts any peer, ' +
          'a list trusts only peers whose address matches one of these IP addresses or CIDR ranges.',
      ),
  })
  .describe('The client-facing listener.');
