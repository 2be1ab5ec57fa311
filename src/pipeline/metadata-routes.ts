/**
 * The RFC 9728 protected-resource metadata routes on the client-facing listener: the documents
 * the policy snapshot built (src/auth/resource-metadata.ts), with the listener's CORS.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WELL_KNOWN_PATH, type ProtectedResourceMetadata } from '../auth/resource-metadata.js';
import { GatewayError } from '../errors.js';
import { isPreflight, type CorsRules } from '../listener/cors.js';

/** What the metadata routes read from the policy in force, once per request. */
export interface MetadataPolicy {
  readonly metadataDocuments: ReadonlyMap<string, ProtectedResourceMetadata>;
  /** The listener's CORS (src/listener/cors.ts); undefined with listen.cors.mode none. */
  readonly cors: CorsRules | undefined;
}

/**
 * Serves the documents of the current policy (`policyNow` is read per request, so a new
 * policy's documents are served from its first request on). A path without a document is
 * answered like any unknown path.
 *
 * A browser client reads the document the 401 challenge names before it can ask for a token,
 * so it gets the listener's CORS. The document is public and no Origin check stands in front of
 * it: an origin the Origin check would refuse gets the document without Access-Control-Allow-Origin,
 * which its browser keeps from the page, and a preflight from it gets that check's 403.
 */
export function registerResourceMetadataRoutes(app: FastifyInstance, policyNow: () => MetadataPolicy): void {
  const documentOf = (policy: MetadataPolicy, url: string) => {
    const queryAt = url.indexOf('?');
    return policy.metadataDocuments.get(queryAt < 0 ? url : url.slice(0, queryAt));
  };
  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const policy = policyNow();
    const document = documentOf(policy, request.url);
    if (!document) throw new GatewayError('TG_ERR_NO_ROUTE');
    const { origin } = request.headers;
    if (policy.cors) reply.headers(policy.cors.answerHeaders(origin !== undefined && policy.cors.allows(origin) ? origin : undefined));
    // Public, and only changes with the policy: clients and CDNs may keep it a while.
    return reply.header('cache-control', 'public, max-age=300').type('application/json').send(document);
  };
  const preflight = async (request: FastifyRequest, reply: FastifyReply) => {
    const policy = policyNow();
    const { origin } = request.headers;
    if (!policy.cors || origin === undefined || !isPreflight(request.method, request.headers) || !documentOf(policy, request.url)) {
      throw new GatewayError('TG_ERR_NO_ROUTE');
    }
    if (!policy.cors.allows(origin)) throw new GatewayError('TG_ERR_ORIGIN_NOT_ALLOWED');
    return reply.code(204).headers(policy.cors.preflightHeaders(origin)).send();
  };
  app.get(WELL_KNOWN_PATH, serve);
  app.get(`${WELL_KNOWN_PATH}/*`, serve);
  app.options(WELL_KNOWN_PATH, preflight);
  app.options(`${WELL_KNOWN_PATH}/*`, preflight);
}
