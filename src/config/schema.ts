/**
 * The policy file's schema: the one source for the validator, the TypeScript types and the
 * committed JSON Schema. Each section lives in its own file under sections/.
 *
 * Relations between sections (a route naming an upstream, two listeners on one port) are not
 * checked here but in relations.ts: zod runs object refinements even after some fields failed,
 * so a refinement here would see half-parsed data, and it would be skipped altogether after
 * others, hiding problems that a single run should report.
 */
import { z } from 'zod';
import { adminSchema } from './sections/admin.js';
import { auditSchema } from './sections/audit.js';
import { authSchema } from './sections/auth.js';
import { consoleSchema } from './sections/console.js';
import { limitsSchema } from './sections/limits.js';
import { listenSchema } from './sections/listen.js';
import { loggingSchema } from './sections/logging.js';
import { publicUrlSchema } from './sections/public-url.js';
import { routesSchema } from './sections/routes.js';
import { storeSchema } from './sections/store.js';
import { tasksSchema } from './sections/tasks.js';
import { toolLimitsSchema } from './sections/tool-limits.js';
import { tracingSchema } from './sections/tracing.js';
import { upstreamsSchema } from './sections/upstreams.js';

export const configSchema = z
  .strictObject({
    listen: listenSchema.prefault({}),
    admin: adminSchema.prefault({}),
    publicUrl: publicUrlSchema,
    auth: authSchema,
    upstreams: upstreamsSchema,
    routes: routesSchema,
    tasks: tasksSchema.prefault({}),
    toolLimits: toolLimitsSchema.prefault({}),
    store: storeSchema.prefault({ type: 'memory' }),
    audit: auditSchema.prefault({}),
    limits: limitsSchema.prefault({}),
    logging: loggingSchema.prefault({}),
    tracing: tracingSchema.prefault({ mode: 'none' }),
    console: consoleSchema.prefault({}),
  })
  .meta({ title: 'taskgate policy' })
  .describe('The taskgate policy file. Durations are strings with a unit (30s); sizes are strings with a binary unit (64KiB) or a number of bytes.');

/** The validated policy, with durations in milliseconds and sizes in bytes. */
export type Config = z.output<typeof configSchema>;
/** The policy as written, before defaults and unit conversion. */
export type ConfigInput = z.input<typeof configSchema>;

export type ListenConfig = Config['listen'];
export type AdminConfig = Config['admin'];
export type AuthConfig = Config['auth'];
export type UpstreamConfig = Config['upstreams'][string];
export type RouteConfig = Config['routes'][number];
export type LimitsConfig = Config['limits'];
export type LoggingConfig = Config['logging'];
export type TasksPolicy = Config['tasks'];
export type StoreConfig = Config['store'];
export type TracingConfig = Config['tracing'];
export type ConsolePolicy = Config['console'];
