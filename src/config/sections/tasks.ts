/** `tasks`: what the gateway enforces on the tasks it takes over (DESIGN.md §3). */
import { z } from 'zod';
import { durationSchema, sizeSchema } from '../units.js';
import { pushSchema } from './push.js';

const toolOverrideSchema = z
  .strictObject({
    maxTtl: durationSchema()
      .optional()
      .describe('Cap on this tool\'s task lifetime, below tasks.ttl.max; use a few minutes for sensitive results.'),
    readOnce: z
      .boolean()
      .default(false)
      .describe('Forget the handle right after the result is first delivered (tasks/result, or a completed tasks/get).'),
  })
  .describe('Overrides for the tasks of one tool.');

const pollSchema = z
  .strictObject({
    mode: z
      .enum(['cached', 'reject'])
      .default('cached')
      .describe(
        'What an early tasks/get gets: cached = the last answer the gateway saw for that task, without ' +
          'contacting the backend; reject = 429 with Retry-After and JSON-RPC error -31001.',
      ),
    tolerance: durationSchema().prefault('50ms').describe('A poll this much before the interval has passed still counts as on time; applied as at most the task\'s interval less 1 ms, so polls never pass in a burst.'),
    floor: durationSchema()
      .prefault('0s')
      .describe('Smallest poll interval told to clients; a backend interval below it is raised to it.'),
    default: durationSchema().prefault('1s').describe('Poll interval told to clients when the backend gives none.'),
    abuseFactor: z
      .int()
      .min(1)
      .default(20)
      .describe('More early polls than this between two allowed ones is answered 429 in every mode.'),
  })
  .describe('Poll governance: hold every client to the task\'s own poll interval.');

const providedSchema = z
  .strictObject({
    maxRunning: z
      .int()
      .min(1)
      .default(1000)
      .describe(
        'Most backend calls of gateway-run tasks one replica holds at once. Past it a 2025-11-25 task creation ' +
          'is answered 429 (TG_ERR_GATEWAY_BUSY); a 2026-07-28 call stays a plain call.',
      ),
    maxResultBytes: sizeSchema()
      .prefault('1MiB')
      .describe(
        'Largest answer of the backend\'s a gateway-run task keeps, as UTF-8 JSON: its result or its JSON-RPC error, the ' +
          'input it asks for (2026-07-28: inputRequests and requestState together), the questions it leaves unanswered ' +
          '(2025-11-25: all pending together). Past it the task ends failed, saying why, and nothing of it is kept or served.',
      ),
    lease: durationSchema()
      .prefault('15s')
      .describe(
        'How long a replica\'s hold on a running call lasts without renewal (renewed every third of it). A task ' +
          'whose replica stopped ends failed within this plus one second.',
      ),
  })
  .describe('Tasks the gateway runs itself (upstreams.*.providedTasks): per-replica limits and the call lease.');

export const tasksSchema = z
  .strictObject({
    ttl: z
      .strictObject({
        default: durationSchema()
          .prefault('10m')
          .describe('Lifetime asked of the backend when a 2025-11-25 client requests none.'),
        max: durationSchema()
          .prefault('1h')
          .describe(
            'Longest task lifetime. Requested and advertised TTLs are capped to it (never unlimited), and every ' +
              'answer carries the effective value; after it the handle is forgotten and a non-terminal task is ' +
              'cancelled upstream.',
          ),
      })
      .prefault({})
      .describe('Task lifetimes.'),
    maxLivePerPrincipal: z
      .int()
      .min(1)
      .default(100)
      .describe('Most tasks one principal may have that are not yet terminal; the next creation is refused with 429.'),
    createRate: z
      .strictObject({
        limit: z.int().min(1).default(120).describe('Tasks one principal may create per window.'),
        window: durationSchema().prefault('1m').describe('The fixed window the limit counts in.'),
      })
      .prefault({})
      .describe(
        'Task creations per principal, counted in the store (shared by replicas). Past it a 2025 request ' +
          'asking for a task gets 429 before reaching the backend; a 2026 creation is cancelled upstream and refused.',
      ),
    maxResultWaitsPerPrincipal: z
      .int()
      .min(1)
      .default(16)
      .describe('Concurrent 2025 tasks/result requests (which may block) one principal may hold open on one replica.'),
    maxRecords: z
      .int()
      .min(1)
      .default(1_000_000)
      .describe(
        'Most task records the memory store holds; creation beyond it is refused with 503. Not used with ' +
          'store.type redis, which Redis\'s own maxmemory bounds (and key TTLs keep lean).',
      ),
    statusMessageMaxLength: z
      .int()
      .min(0)
      .default(512)
      .describe(
        'statusMessage is cut to this many characters and stripped of invisible characters (controls, format, ' +
          'default-ignorable, private-use and unassigned code points: a model may read it).',
      ),
    poll: pollSchema.prefault({}),
    provided: providedSchema.prefault({}),
    push: pushSchema.prefault({}),
    listPageSize: z.int().min(1).max(1000).default(50).describe('Tasks per page of a 2025-11-25 tasks/list answer.'),
    tools: z
      .record(z.string().min(1).max(128), toolOverrideSchema)
      .prefault({})
      .describe('Per-tool overrides, keyed by tool name.'),
  })
  .describe('Task takeover: lifetimes, per-principal limits and per-tool retention.');

export type TasksConfig = z.output<typeof tasksSchema>;
