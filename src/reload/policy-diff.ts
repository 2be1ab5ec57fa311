/**
 * What a reload changes, as key paths written the way check-config writes them
 * (`upstreams.tools.instances[1]`, `tasks.poll.floor`), and which of those a running gateway
 * cannot apply. Paths name keys and list positions only, never a value: any value may have
 * come from a `${NAME}` in the environment, and those are never logged. (Map keys, such as
 * upstream and tool names, are never substituted, so they may appear.)
 */
import { formatPath } from '../config/config-error.js';
import type { Config } from '../config/index.js';

type Segment = string | number;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every path where `before` and `after` differ: the deepest differing key, or a whole item added or removed. */
export function changedPaths(before: unknown, after: unknown): string[] {
  const paths: string[] = [];
  const visit = (a: unknown, b: unknown, at: Segment[]): void => {
    if (Object.is(a, b)) return;
    if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) {
        if (i >= a.length || i >= b.length) paths.push(formatPath([...at, i]));
        else visit(a[i], b[i], [...at, i]);
      }
      return;
    }
    if (isPlainObject(a) && isPlainObject(b)) {
      for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
        if (!(key in a) || !(key in b)) paths.push(formatPath([...at, key]));
        else visit(a[key], b[key], [...at, key]);
      }
      return;
    }
    paths.push(formatPath(at));
  };
  visit(before, after, []);
  return paths;
}

/**
 * Keys fixed when the process starts: the listeners and their sockets (addresses, the limits
 * the HTTP server and body parser were built with, which proxies fastify trusts), the store
 * and its connection, the audit trail's destinations and detectors, and how logs are written.
 * Everything else in the policy can change while the gateway runs. docs/policy.md marks these
 * keys from this list (scripts/gen-config-schema.ts).
 */
export const RESTART_ONLY_KEYS: readonly string[] = [
  'listen.host',
  'listen.port',
  'listen.trustProxy',
  'admin.host',
  'admin.port',
  'limits.maxBodyBytes',
  'limits.maxHeaderBytes',
  'limits.headersTimeout',
  'limits.keepAliveTimeout',
  'limits.maxConnections',
  'tasks.maxRecords',
  'store',
  'audit',
  'logging.buffered',
  'logging.flushInterval',
];

export function isRestartOnly(path: string): boolean {
  return RESTART_ONLY_KEYS.some((key) => path === key || path.startsWith(`${key}.`) || path.startsWith(`${key}[`));
}

export interface PolicyChange {
  /** Every changed path. */
  readonly changed: string[];
  /** The changed paths a running gateway cannot apply. */
  readonly restartOnly: string[];
}

export function comparePolicies(running: Config, next: Config): PolicyChange {
  const changed = changedPaths(running, next);
  return { changed, restartOnly: changed.filter(isRestartOnly) };
}
