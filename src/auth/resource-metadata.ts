/**
 * RFC 9728 OAuth 2.0 Protected Resource Metadata: each route is a protected resource whose
 * canonical URI (RFC 8707, as MCP clients compute it) is publicUrl + route path, and whose
 * metadata document lives at that URI with `/.well-known/oauth-protected-resource` inserted
 * between host and path. MCP clients find it from the 401 challenge or the well-known URI.
 */

export const WELL_KNOWN_PATH = '/.well-known/oauth-protected-resource';

export interface ProtectedResourceMetadata {
  readonly resource: string;
  readonly authorization_servers: readonly string[];
  readonly scopes_supported?: readonly string[];
  readonly bearer_methods_supported: readonly ['header'];
}

/** A route as a protected resource. */
export interface ProtectedResource {
  /** Canonical resource URI: the audience tokens for this route must carry. */
  readonly resource: string;
  /** Absolute URL of this resource's metadata document (for resource_metadata="..."). */
  readonly metadataUrl: string;
  /** Path on this gateway where that document is served. */
  readonly metadataPath: string;
  readonly scopes: readonly string[];
}

/**
 * Lowercase scheme and host (URL does that), no fragment, no trailing slash: the form the MCP
 * authorization spec tells clients to send as `resource`, so the one tokens are minted for.
 */
export function canonicalResourceUri(publicUrl: string, routePath: string): string {
  const base = new URL(publicUrl);
  const path = `${base.pathname.replace(/\/+$/, '')}${routePath}`.replace(/\/+$/, '');
  return `${base.origin}${path}`;
}

export function describeResource(publicUrl: string, route: { path: string; scopes: readonly string[] }): ProtectedResource {
  const resource = canonicalResourceUri(publicUrl, route.path);
  const url = new URL(resource);
  const metadataPath = `${WELL_KNOWN_PATH}${url.pathname === '/' ? '' : url.pathname}`;
  return { resource, metadataUrl: `${url.origin}${metadataPath}`, metadataPath, scopes: route.scopes };
}

export function buildResourceMetadata(resource: ProtectedResource, issuers: readonly string[]): ProtectedResourceMetadata {
  return {
    resource: resource.resource,
    authorization_servers: issuers,
    ...(resource.scopes.length > 0 ? { scopes_supported: resource.scopes } : {}),
    bearer_methods_supported: ['header'],
  };
}

/**
 * The documents to serve, by path: one per resource, plus the root form
 * `/.well-known/oauth-protected-resource`, which describes the route at `/` if there is one,
 * else the first route (RFC 9728 allows only one document there, and clients fall back to it
 * for any path).
 */
export function buildMetadataDocuments(resources: readonly ProtectedResource[], issuers: readonly string[]): Map<string, ProtectedResourceMetadata> {
  const documents = new Map<string, ProtectedResourceMetadata>();
  for (const resource of resources) {
    // Two routes can share a metadata path only by sharing a resource URI; the first wins.
    if (!documents.has(resource.metadataPath)) documents.set(resource.metadataPath, buildResourceMetadata(resource, issuers));
  }
  if (!documents.has(WELL_KNOWN_PATH) && resources[0]) documents.set(WELL_KNOWN_PATH, buildResourceMetadata(resources[0], issuers));
  return documents;
}
