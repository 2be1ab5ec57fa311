/** `logging`: the pino logger (and how both logs, general and audit, are written). */
import { z } from 'zod';
import { durationSchema } from '../units.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const loggingSchema = z
  .strictObject({
    level: z.enum(LOG_LEVELS).default('info').describe('Least severe level that is logged; silent logs nothing.'),
    buffered: z
      .boolean()
      .default(false)
      .describe(
        'false (the default): every line of the general log and the audit trail is written at once, synchronously; a stuck ' +
          'destination stalls the gateway rather than lose a line. true: lines are written in batches of whole lines, at most ' +
          '4 KiB each (so the two logs never interleave mid-line on one pipe), when a batch fills, every flushInterval and at ' +
          'exit, off the event loop; a process killed outright (SIGKILL, the OOM killer) loses the last flushInterval of lines, ' +
          'and lines a stuck destination cannot take are dropped past 16 MiB and counted in taskgate_log_lines_dropped_total. ' +
          'On the Intel benchmark machine batching was slower (fewer requests per second, more heap held under load); on the AMD ' +
          'one it cut a cached poll\'s CPU to 0.82-0.88x: see docs/operations.md.',
      ),
    flushInterval: durationSchema()
      .prefault('250ms')
      .refine((ms) => ms >= 10 && ms <= 10_000, { error: 'between 10ms and 10s' })
      .describe('With buffered logging, the longest a line waits before it is written.'),
  })
  .describe('Logging.');
