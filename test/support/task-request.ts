/**
 * A client request as the tasks stage and its capabilities see it (src/tasks/task-request.ts),
 * built as a plain object for unit tests: no fastify, no listener. Its route is a real
 * BackendRoute of one upstream, `tools`, built from the policy schema's defaults (or the
 * `upstream` section given), so what a stage reads of the route is what a gateway would build.
 */
import pino from 'pino';
import { InFlight } from '../../src/lifecycle/in-flight.js';
import type { UpstreamConfig } from '../../src/config/index.js';
import { upstreamSchema } from '../../src/config/sections/upstreams.js';
import type { Era } from '../../src/mcp/era.js';
import type { McpMessage } from '../../src/mcp/jsonrpc.js';
import { InstancePool } from '../../src/routing/balancer.js';
import { wireOf } from '../../src/task-model/task-wire.js';
import type { TaskRequest } from '../../src/tasks/task-request.js';
import { BackendRoute } from '../../src/upstream/backend-route.js';
import { ClientAbort } from '../../src/upstream/client-abort.js';
import { UpstreamAgent } from '../../src/upstream/dispatcher.js';

export interface RouteOptions {
  /** The upstream's section of a policy (instances default to one on 127.0.0.1:9). */
  readonly upstream?: Record<string, unknown>;
  /** Or the section as a parsed policy holds it. */
  readonly config?: UpstreamConfig;
  readonly path?: string;
  readonly trustProxy?: boolean;
}

/** A real BackendRoute for upstream `tools`; its agent opens no connection until asked to. */
export function testBackendRoute(options: RouteOptions = {}): BackendRoute {
  const upstream = options.config ?? upstreamSchema.parse({ instances: ['http://127.0.0.1:9'], ...options.upstream });
  const pool = new InstancePool('tools', upstream.instances, upstream.cooldown);
  const t = upstream.timeouts;
  return new BackendRoute({
    path: options.path ?? '/mcp',
    upstreamPath: '/mcp',
    pool,
    agent: new UpstreamAgent({ connectMs: t.connect, headersMs: t.headers, bodyMs: t.body }, upstream.connections),
    credentials: { credentials: upstream.credentials, strippedHeaders: new Set() },
    upstream,
    limits: { maxResponseBytes: 1024 * 1024, maxSseEventBytes: 1024 * 1024 },
    sessions: { idleTtlMs: 60_000 },
    inFlight: new InFlight(),
    tracing: undefined,
    trustProxy: options.trustProxy ?? false,
    cors: false,
    upstreamHeadersDuration: { observe: () => undefined },
  });
}

export interface TaskRequestOptions extends Partial<Omit<TaskRequest, 'mcp'>> {
  /** The era of the parsed body (with `message`); a request with neither has no body. */
  readonly era?: Era;
  readonly message?: McpMessage;
}

/**
 * A TaskRequest on `route` (a fresh testBackendRoute by default); `fields` are laid over it. Its
 * wire is its body's era, as the pipeline looks it up (a `wire` given wins).
 */
export function taskRequest(options: TaskRequestOptions = {}): TaskRequest {
  const { era, message, ...fields } = options;
  const mcp = era === undefined && message === undefined ? undefined : { era: era ?? 'legacy', batch: false, body: Buffer.alloc(0), messages: message ? [message] : [], message };
  const request = {
    route: testBackendRoute(),
    clientHeaders: {},
    httpMethod: 'POST',
    requestId: 'req-1',
    clientIp: '127.0.0.1',
    peerAddress: '127.0.0.1',
    protocol: 'http',
    log: pino({ level: 'silent' }),
    abort: new ClientAbort(),
    mcp,
    ...fields,
  };
  return { ...request, wire: fields.wire ?? wireOf(request.mcp?.era ?? 'legacy') };
}
