/** `logging`: the pino logger. */
import { z } from 'zod';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const loggingSchema = z
  .strictObject({
    level: z.enum(LOG_LEVELS).default('info').describe('Least severe level that is logged; silent logs nothing.'),
  })
  .describe('Logging.');
