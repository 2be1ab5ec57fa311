/** `audit`: the task audit trail and the abuse detectors (DESIGN.md §6). */
import { z } from 'zod';
import { durationSchema } from '../units.js';

export const auditSchema = z
  .strictObject({
    stdout: z
      .boolean()
      .default(true)
      .describe('Write audit events to stdout, one JSON line each, marked "log":"audit" (separate from the general log\'s lines).'),
    file: z
      .string()
      .min(1)
      .optional()
      .describe('Also (or only, with stdout false) append audit events to this file; its folder is created if missing.'),
    handleHashSalt: z
      .string()
      .min(16)
      .optional()
      .describe(
        'Salt of the short hash that stands for a task handle in the general log. Set the same secret on every ' +
          'replica to correlate their logs; by default each process picks a random one.',
      ),
    enumeration: z
      .strictObject({
        threshold: z.int().min(1).default(20).describe('Refused task lookups by one principal within the window that count as probing.'),
        window: durationSchema().prefault('1m').describe('The window the refused lookups are counted in; it starts at the first one.'),
        action: z
          .enum(['warn', 'suspend'])
          .default('warn')
          .describe(
            'warn = a log line and a metric (counted per replica); suspend = also answer every tasks/* of that ' +
              'principal, and every subscriptions/listen of it naming taskIds, 429 (-31003, Retry-After) for the ' +
              'rest of the window, counted in the store so every replica agrees, audited once per suspension.',
          ),
      })
      .prefault({})
      .describe('Detector for a principal probing for task handles (a burst of not-found or foreign lookups, handles a listen named included).'),
  })
  .describe('The task audit trail (raw handles and principals, one event per task operation) and the abuse detectors.');

export type AuditConfig = z.output<typeof auditSchema>;
