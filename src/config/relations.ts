/**
 * Checks that span sections. They run on the raw input, each fact taken from the smallest
 * piece that validates on its own, so that a typo in one route or one upstream does not hide
 * a route that names a missing upstream elsewhere: one run reports everything.
 */
import { adminSchema } from './sections/admin.js';
import { listenSchema } from './sections/listen.js';
import { routeSchema } from './sections/routes.js';
import type { PathSegment } from './yaml-positions.js';

export interface RelationIssue {
  path: PathSegment[];
  message: string;
}

interface RelationFacts {
  /** Every upstream defined, valid or not: its own problems are reported elsewhere. */
  upstreamNames?: string[];
  /** By index; undefined where the route itself is invalid. */
  routes?: ({ path: string; upstream: string; scopes: string[] } | undefined)[];
  /** auth.mode as written; only `none` matters here. */
  authMode?: unknown;
  /** Upstream name → credentials.type as written. */
  credentialTypes: [string, unknown][];
  listenPort?: number;
  adminPort?: number;
  /** Whether admin.port is in the file, and so the place to point at. */
  adminPortWritten: boolean;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function gatherFacts(input: unknown): RelationFacts {
  const root = asRecord(input);
  if (!root) return { adminPortWritten: false, credentialTypes: [] };
  const upstreams = asRecord(root.upstreams);
  const routes = Array.isArray(root.routes) ? root.routes : undefined;
  // An absent section means defaults, whose ports the shape's own default supplies.
  const portIn = (section: unknown, schema: typeof listenSchema.shape.port) => {
    if (section !== undefined && !asRecord(section)) return undefined;
    const result = schema.safeParse(asRecord(section)?.port);
    return result.success ? result.data : undefined;
  };
  return {
    upstreamNames: upstreams ? Object.keys(upstreams) : undefined,
    routes: routes?.map((route) => {
      const result = routeSchema.safeParse(route);
      return result.success ? result.data : undefined;
    }),
    listenPort: portIn(root.listen, listenSchema.shape.port),
    adminPort: portIn(root.admin, adminSchema.shape.port),
    adminPortWritten: asRecord(root.admin)?.port !== undefined,
    authMode: asRecord(root.auth)?.mode,
    credentialTypes: Object.entries(upstreams ?? {}).map(([name, upstream]) => [name, asRecord(asRecord(upstream)?.credentials)?.type]),
  };
}

/**
 * Messages name keys and indexes, never values: a value may have come from the environment.
 * Upstream names are map keys, which are never substituted, so listing them is safe.
 */
export function checkRelations(input: unknown): RelationIssue[] {
  const issues: RelationIssue[] = [];
  const { upstreamNames, routes, listenPort, adminPort, adminPortWritten, authMode, credentialTypes } = gatherFacts(input);

  if (routes && upstreamNames) {
    routes.forEach((route, index) => {
      if (route && !upstreamNames.includes(route.upstream)) {
        const known = upstreamNames.length > 0 ? `; defined upstreams: ${upstreamNames.join(', ')}` : '';
        issues.push({ path: ['routes', index, 'upstream'], message: `names no defined upstream${known}` });
      }
    });
  }

  if (routes) {
    const firstIndexByPath = new Map<string, number>();
    routes.forEach((route, index) => {
      if (!route) return;
      const first = firstIndexByPath.get(route.path);
      if (first === undefined) firstIndexByPath.set(route.path, index);
      else issues.push({ path: ['routes', index, 'path'], message: `duplicate of routes[${first}].path` });
    });
  }

  // Without authentication there is no principal: scopes could never be checked and identity
  // headers never filled, and silently skipping either would look like protection.
  if (authMode === 'none') {
    routes?.forEach((route, index) => {
      if (route && route.scopes.length > 0) issues.push({ path: ['routes', index, 'scopes'], message: 'needs auth.mode jwt: without authentication there are no scopes to check' });
    });
    for (const [name, type] of credentialTypes) {
      if (type === 'identity-headers') {
        issues.push({ path: ['upstreams', name, 'credentials', 'type'], message: 'identity-headers needs auth.mode jwt: without authentication there is no identity to send' });
      }
      if (type === 'token-exchange') {
        issues.push({ path: ['upstreams', name, 'credentials', 'type'], message: 'token-exchange needs auth.mode jwt: without authentication there is no token to exchange' });
      }
    }
  }

  // Port 0 asks the OS for a free port, so two zeros never collide.
  if (listenPort !== undefined && listenPort !== 0 && listenPort === adminPort) {
    issues.push(
      adminPortWritten
        ? { path: ['admin', 'port'], message: 'must differ from listen.port (unless one of them is 0)' }
        : { path: ['listen', 'port'], message: `must differ from admin.port (${adminPort} by default) unless one of them is 0` },
    );
  }

  return issues;
}
