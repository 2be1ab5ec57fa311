/**
 * Validation of an already-parsed policy: the schema, then the relations between sections,
 * then a deep freeze. parseConfig adds the YAML side (positions, `${NAME}`) on top.
 */
import type { z } from 'zod';
import { ConfigError, formatPath } from './config-error.js';
import { checkRelations } from './relations.js';
import { configSchema, type Config } from './schema.js';
import type { PathSegment } from './yaml-positions.js';

export interface ValidationIssue {
  path: PathSegment[];
  message: string;
  /** The problem is with the key at `path` rather than its value. */
  atKey: boolean;
}

export type ValidationResult = { ok: true; config: Config } | { ok: false; issues: ValidationIssue[] };

function toSegments(path: readonly PropertyKey[]): PathSegment[] {
  return path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
}

/** zod reports unknown keys per object and record-key problems nested; both are split out. */
function fromZodIssue(issue: z.core.$ZodIssue): ValidationIssue[] {
  const path = toSegments(issue.path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ path: [...path, key], message: 'unknown key', atKey: true }));
    case 'invalid_key':
      return issue.issues.map((inner) => ({ path, message: `invalid key: ${inner.message}`, atKey: true }));
    case 'custom':
      // Schemas mark problems with a key, such as a badly formed name, with `params.atKey`.
      return [{ path, message: issue.message, atKey: issue.params?.atKey === true }];
    default:
      return [{ path, message: issue.message, atKey: false }];
  }
}

/** "Invalid input: expected string, received undefined" is zod's way of saying "required". */
const errorMap: z.core.$ZodErrorMap = (issue) =>
  issue.code === 'invalid_type' && issue.input === undefined ? 'required' : undefined;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Never throws; the caller decides how to report. */
export function checkConfig(input: unknown): ValidationResult {
  const parsed = configSchema.safeParse(input, { error: errorMap });
  const issues = parsed.success ? [] : parsed.error.issues.flatMap(fromZodIssue);
  for (const { path, message } of checkRelations(input)) issues.push({ path, message, atKey: false });
  if (issues.length > 0 || !parsed.success) return { ok: false, issues };
  return { ok: true, config: deepFreeze(parsed.data) };
}

/**
 * For policies built in code (tests, embedding): the same checks as a policy file, without
 * line numbers. Throws ConfigError.
 */
export function validateConfig(input: unknown, source = 'policy'): Config {
  const result = checkConfig(input);
  if (result.ok) return result.config;
  throw new ConfigError(
    source,
    result.issues.map(({ path, message }) => ({ path: formatPath(path), message })),
  );
}
