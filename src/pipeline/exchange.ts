/**
 * The exchange: one client request's passage through the pipeline (DESIGN.md §2), kept on the
 * fastify request as `request.exchange` from the moment its route is known to the end of its
 * response. Only this room reads or writes it as a whole. Each stage below is handed the view
 * it works with (tasks/task-call.ts, upstream/caller.ts, observability/exchange-facts.ts), so
 * no stage knows fastify, the policy snapshot, or what the other stages keep here.
 */
import type { FastifyRequest } from 'fastify';
import type { RouteAuth } from '../auth/auth-stage.js';
import type { Era } from '../mcp/era.js';
import type { McpContext } from '../mcp/mcp-stage.js';
import type { ExchangeRecord } from '../observability/exchange-facts.js';
import { LEGACY_WIRE, type EraWire } from '../task-model/task-wire.js';
import type { TaskRequest } from '../tasks/task-request.js';
import { ClientAbort } from '../upstream/client-abort.js';
import type { PolicySnapshot, RouteEntry } from './policy-snapshot.js';

export type { Era, McpContext };

export interface Exchange extends TaskRequest, ExchangeRecord {
  /** The policy this request runs under, read once at its start. */
  readonly snapshot: PolicySnapshot;
  /** The route's authentication; undefined when the policy runs without it (auth.mode none). */
  readonly routeAuth: RouteAuth | undefined;
  readonly abort: TaskRequest['abort'];
  readonly route: TaskRequest['route'];
  mcp?: McpContext;
  wire: EraWire;
  // Written by the auth stage's outcome, in the pipeline.
  principal?: TaskRequest['principal'];
  principalKey?: string;
  subjectToken?: TaskRequest['subjectToken'];
  instance?: TaskRequest['instance'];
  sessionId?: string;
  callHold?: TaskRequest['callHold'];
  /** Instances that refused this request's connection (for fail-over of new work). */
  refused?: Set<string>;
  /** The preHandler answered (tasks stage, status push, provided tasks): nothing is forwarded. */
  answeredLocally?: boolean;
  upstreamStartedAt?: bigint;
}

declare module 'fastify' {
  interface FastifyRequest {
    exchange: Exchange;
  }
}

/**
 * The exchange of a request whose route is known. What is costly to work out and seldom read
 * (the client's address as listen.trustProxy says, the protocol) is read from the request
 * only when asked: most requests never are.
 */
export class RequestExchange implements Exchange {
  readonly snapshot: PolicySnapshot;
  readonly route: Exchange['route'];
  readonly routeAuth: RouteAuth | undefined;
  readonly abort = new ClientAbort();
  readonly trace: Exchange['trace'];
  readonly log: Exchange['log'];
  readonly clientHeaders: Exchange['clientHeaders'];
  readonly httpMethod: string;
  readonly requestId: string;
  principal?: Exchange['principal'] = undefined;
  principalKey?: string = undefined;
  subjectToken?: Exchange['subjectToken'] = undefined;
  upstreamToken?: string = undefined;
  upstreamHeaders?: Exchange['upstreamHeaders'] = undefined;
  mcp?: McpContext = undefined;
  // A request without a body is a legacy GET or DELETE; a POST's era is the mcp stage's.
  wire: EraWire = LEGACY_WIRE;
  sessionId?: string = undefined;
  callHold?: Exchange['callHold'] = undefined;
  instance?: Exchange['instance'] = undefined;
  refused?: Set<string> = undefined;
  answeredLocally?: boolean = undefined;
  upstreamStartedAt?: bigint = undefined;
  snapshotTag?: string = undefined;
  releaseResultWait?: () => void = undefined;
  replyStatus?: number = undefined;
  replyHeaders?: Record<string, string> = undefined;
  // TaskFacts
  task?: Exchange['task'] = undefined;
  createdTask?: Exchange['createdTask'] = undefined;
  requestedHandle?: string = undefined;
  statusSeen?: Exchange['statusSeen'] = undefined;
  toolName?: string = undefined;
  declaresTasks?: boolean = undefined;
  taskOutcome?: Exchange['taskOutcome'] = undefined;
  pollOutcome?: Exchange['pollOutcome'] = undefined;
  taskOperation?: Exchange['taskOperation'] = undefined;
  limitRefusal?: Exchange['limitRefusal'] = undefined;
  private readonly request: FastifyRequest;

  constructor(request: FastifyRequest, snapshot: PolicySnapshot, route: RouteEntry) {
    this.request = request;
    this.snapshot = snapshot;
    this.route = route.backend;
    this.routeAuth = route.auth;
    this.log = request.log;
    this.clientHeaders = request.headers;
    this.httpMethod = request.method;
    this.requestId = request.id;
    // With tracing on; the pipeline finishes it when the response closes.
    this.trace = snapshot.tracing?.traceRequest(this);
  }

  get clientIp(): string {
    return this.request.ip;
  }

  get peerAddress(): string {
    return this.request.socket.remoteAddress ?? '';
  }

  get protocol(): string {
    return this.request.protocol;
  }

  get httpVersion(): string {
    return this.request.raw.httpVersion;
  }
}
