/**
 * pino options for the general log. Credentials are redacted by pino itself (fast-redact),
 * both in request headers and anywhere an error object might carry them.
 */
import type { LoggerOptions } from 'pino';

// Explicit paths only: a wildcard makes the redactor walk every object of every line, which
// showed up in the request path's profile; the gateway's own lines never carry headers, and
// these cover the places a library or an error could put them.
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'err.headers.authorization',
  'err.request.headers.authorization',
];

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export function buildLoggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    base: { service: 'taskgate' },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
}
