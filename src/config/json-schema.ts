/** The committed JSON Schema (config/taskgate.schema.json), for editors and other tooling. */
import { z } from 'zod';
import { configSchema } from './schema.js';

/**
 * The input side: what an operator writes, so durations are `"30s"` and defaults appear as
 * written. Cross-section rules and `${NAME}` substitution are beyond JSON Schema; an editor
 * will flag `port: ${PORT}`, which the gateway accepts.
 */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
}
