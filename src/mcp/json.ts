/**
 * JSON values as the gateway reads them: one definition of "a JSON object" for every room
 * (messages, task objects, policy values), so that arrays and null are never taken for one.
 */
export type JsonObject = Record<string, unknown>;

/** A JSON object: not null, not an array. */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
