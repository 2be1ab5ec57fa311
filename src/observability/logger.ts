/**
 * pino options for the general log. Credentials are redacted by pino itself (fast-redact),
 * both in request headers and anywhere an error object might carry them.
 */
import pino, { type BaseLogger, type Logger, type LoggerOptions } from 'pino';
import type { LoggingConfig } from '../config/index.js';

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

let stampedAt = 0;
let stamp = '';

/**
 * pino's `timestamp` for both logs: `,"time":"<ISO 8601>"`. Every request writes two lines,
 * and formatting a date costs more than the rest of a line's fixed part, so the text is made
 * once per millisecond (the resolution it shows) and reused.
 */
export function isoTimestamp(): string {
  const now = Date.now();
  if (now !== stampedAt) {
    stampedAt = now;
    stamp = `,"time":"${new Date(now).toISOString()}"`;
  }
  return stamp;
}

export function buildLoggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    base: { service: 'taskgate' },
    timestamp: isoTimestamp,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
}

/** One write per batch of whole lines of at most PIPE_BUF (4 KiB) bytes: atomic on a pipe. */
const BATCH_BYTES = 4096;
/** A batch is written once this much is waiting (below BATCH_BYTES, which must exceed it). */
const BATCH_FILL_BYTES = 3072;
/** What a stuck destination may hold before further lines are dropped (and counted). */
const MAX_PENDING_BYTES = 16 * 1024 * 1024;

export type LogWriting = Pick<LoggingConfig, 'buffered' | 'flushInterval'>;

/**
 * Where a log is written (fd 1, or a file path): sonic-boom, as pino uses it, either
 * synchronous line by line or batched (logging.buffered). Batching is sonic-boom's own
 * (minLength, maxWrite, maxLength, periodicFlush); pino flushes a batched destination at
 * exit. Batches are cut at 4 KiB so that the general log and the audit trail, two
 * destinations on one stdout pipe, never interleave mid-line.
 */
export function logDestination(dest: number | string, writing: LogWriting, onDrop: () => void): pino.DestinationStream & { flush(): void; end(): void } {
  const mkdir = typeof dest === 'string';
  if (!writing.buffered) return pino.destination({ dest, sync: true, mkdir });
  const stream = pino.destination({
    dest,
    sync: false,
    mkdir,
    minLength: BATCH_FILL_BYTES,
    maxWrite: BATCH_BYTES,
    maxLength: MAX_PENDING_BYTES,
    periodicFlush: writing.flushInterval,
  });
  stream.on('drop', onDrop);
  return stream;
}

/** The general log as the gateway builds it when none is given: stdout, per logging.*. */
export function createLogger(config: LoggingConfig, onDrop: () => void = () => undefined): Logger {
  return createGeneralLogger(config.level, logDestination(1, config, onDrop));
}

/** Set on a logger built from buildLoggerOptions alone; its children inherit it (pino children are prototype copies). */
const kOwnOptions = Symbol('taskgate.ownLoggerOptions');
const { chindingsSym, streamSym } = pino.symbols;

/** A pino logger with the gateway's options, whose info lines writeInfoLine may write itself. */
export function createGeneralLogger(level: LogLevel, destination: pino.DestinationStream): Logger {
  const logger = pino(buildLoggerOptions(level), destination);
  (logger as unknown as Record<symbol, unknown>)[kOwnOptions] = true;
  return logger;
}

/**
 * `log.info(fields, msg)`, for the one line every request writes. On a logger with the
 * gateway's own options (createGeneralLogger) the line is written here: pino's shape, in its
 * order (level, time, the logger's bindings as pino already serialised them, the fields,
 * msg), the fields by one native JSON.stringify rather than pino's per-key loop, which showed
 * in the poll profiles. That holds because those options have no mixin, formatter, serializer
 * for these keys or redaction path under them (REDACTED_PATHS names none of their keys).
 * Any other logger (tests pass their own) is asked to write it as usual.
 */
export function writeInfoLine(log: { info(fields: object, msg: string): void }, fields: Record<string, unknown>, msg: string): void {
  const own = log as unknown as Record<symbol, unknown>;
  if (own[kOwnOptions] !== true) {
    log.info(fields, msg);
    return;
  }
  if (!(log as Logger).isLevelEnabled('info')) return;
  const body = JSON.stringify(fields);
  const members = body.length > 2 ? `,${body.slice(1, -1)}` : '';
  (own[streamSym] as pino.DestinationStream).write(`{"level":30${isoTimestamp()}${own[chindingsSym] as string}${members},"msg":${JSON.stringify(msg)}}\n`);
}

/** What a stage writes to a request's log (fastify's request logger is one). */
export type RequestLog = Pick<BaseLogger, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'>;
