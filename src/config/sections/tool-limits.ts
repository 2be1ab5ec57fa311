/** `toolLimits`: how often, and how many at once, one principal may call tools (src/limits/). */
import { z } from 'zod';
import { durationSchema } from '../units.js';

const rateSchema = z
  .strictObject({
    limit: z.int().min(1).describe('Calls allowed per window.'),
    window: durationSchema().prefault('1m').describe('The fixed window the calls are counted in.'),
  })
  .describe('A rate: at most `limit` tools/call per principal in each fixed window.');

const limitPairShape = {
  rate: rateSchema.optional().describe('Calls per window; unset means no rate limit.'),
  concurrency: z
    .int()
    .min(1)
    .optional()
    .describe(
      'Calls in flight at once (until the answer, SSE streams included; a call answered with a task, until that answer; ' +
        'a 2025 call whose client hung up, until the backend answered, at most slotTtl); unset means no cap.',
    ),
};

export const toolLimitsSchema = z
  .strictObject({
    ...limitPairShape,
    slotTtl: durationSchema()
      .prefault('10m')
      .describe(
        'A call still counted in flight after this long is forgotten, so the slots held by a replica that ' +
          'crashed mid-call free themselves; a 2025 call held for its backend after its client hung up is cut ' +
          'then. Keep it above the longest tools/call.',
      ),
    tools: z
      .record(z.string().min(1).max(128), z.strictObject(limitPairShape).describe('Limits of one tool, on top of the global ones.'))
      .prefault({})
      .describe('Per-tool limits, keyed by tool name; a call must pass both its tool\'s limits and the global ones.'),
  })
  .describe(
    'Per-principal limits on tools/call, counted in the store so every replica enforces one number. Past a ' +
      'limit the call is answered 429 with Retry-After and JSON-RPC error -31003, audited, and never reaches ' +
      'the backend. Without authentication every client is the one principal "anonymous". Off by default.',
  );

export type ToolLimitsConfig = z.output<typeof toolLimitsSchema>;
