/** `tasks.push`: status push over 2026-07-28 subscriptions/listen (src/push/, docs/status-push.md). */
import { z } from 'zod';
import { durationSchema, sizeSchema } from '../units.js';

export const pushSchema = z
  .strictObject({
    maxSubscriptionsPerPrincipal: z
      .int()
      .min(1)
      .default(16)
      .describe(
        'Listen streams naming task handles that one principal may hold open on one replica; the next is answered ' +
          '429 with JSON-RPC error -31008 (TG_ERR_TOO_MANY_SUBSCRIPTIONS).',
      ),
    maxTaskIdsPerSubscription: z
      .int()
      .min(1)
      .max(10_000)
      .default(100)
      .describe('Most entries of notifications.taskIds one subscriptions/listen may name; more is answered 400 with JSON-RPC error -31009 (TG_ERR_TOO_MANY_TASK_IDS).'),
    bufferBytes: sizeSchema()
      .prefault('256KiB')
      .refine((bytes) => bytes >= 1024, { error: 'must be at least 1KiB' })
      .describe(
        'Bytes of notifications a listener may leave queued behind the one it is taking (which may be larger: a result ' +
          'bigger than the buffer is still delivered). A listener past it is cut off: its stream ends and the drop is ' +
          'counted; it may listen again and poll meanwhile.',
      ),
    stallTimeout: durationSchema()
      .prefault('30s')
      .refine((ms) => ms >= 1000, { error: 'must be at least 1s' })
      .describe(
        'Longest a listener may take nothing from its stream while the gateway has something waiting for it (a task ' +
          'change, a queued notification); past it the listener is cut off as past bufferBytes. Task changes wait ' +
          'without being held in memory, so this is what cuts off a listener that does not read.',
      ),
  })
  .describe(
    'Task status pushed to 2026-07-28 clients (notifications/tasks on subscriptions/listen) for the caller\'s own tasks, ' +
      'backend-owned and gateway-run; limits per principal and per listener.',
  );

export type PushConfig = z.output<typeof pushSchema>;
