/** `logging`: the pino logger (and how both logs, general and audit, are written). */
import { z } from 'zod';
import { durationSchema } from '../units.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const loggingSchema = z
  .strictObject({
    level: z.enum(LOG_LEVELS).default('info').describe('Least severe level that is logged; silent logs nothing.'),
    buffered: z
      .boolean()
      .default(true)
      .describe(
        'Write the general log and the audit trail in batches of whole lines, at most 4 KiB each (so that the two never interleave ' +
          'mid-line on one pipe), when a batch fills, every flushInterval and at exit; false writes every line at once with a ' +
          'synchronous write. Batching takes the write off the event loop and makes one system call per batch. A process killed outright (SIGKILL, the OOM killer) ' +
          'loses the lines of the last flushInterval; lines that cannot be written because the destination is stuck are dropped ' +
          'past 16 MiB and counted in taskgate_log_lines_dropped_total.',
      ),
    flushInterval: durationSchema()
      .prefault('250ms')
      .refine((ms) => ms >= 10 && ms <= 10_000, { error: 'between 10ms and 10s' })
      .describe('With buffered logging, the longest a line waits before it is written.'),
  })
  .describe('Logging.');
