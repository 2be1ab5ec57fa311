/**
 * What the pipeline stages attach to a request as it passes through them (DESIGN.md §2):
 * each stage adds one typed thing and hands the request on.
 */
import type { McpMessage } from './mcp/jsonrpc.js';
import type { Instance, InstancePool } from './routing/balancer.js';

export type Era = 'modern' | 'legacy';

export interface RouteContext {
  /** The client-facing path from the policy (a bounded metric label). */
  readonly path: string;
  readonly upstreamPath: string;
  readonly pool: InstancePool;
}

export interface McpContext {
  readonly messages: McpMessage[];
  readonly batch: boolean;
  readonly era: Era;
  /** The single message of a non-batch body; undefined for batches. */
  readonly message: McpMessage | undefined;
  /** The raw body as received, forwarded unchanged unless a stage rewrites it. */
  body: Buffer;
}

export interface RequestContext {
  readonly route: RouteContext;
  mcp?: McpContext;
  /** The 2025-era session this request belongs to (Mcp-Session-Id), if any. */
  sessionId?: string;
  instance?: Instance;
  /** Instances that refused this request's connection (for fail-over of new work). */
  refused?: Set<string>;
  /** Aborted when the client goes away before the response has finished. */
  readonly abort: AbortController;
  upstreamStartedAt?: bigint;
}

declare module 'fastify' {
  interface FastifyRequest {
    tg: RequestContext;
  }
}
