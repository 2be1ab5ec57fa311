/**
 * One log line and the request metrics for every client request, written once its answer
 * has gone (fastify's onResponse), plus the task observer's audit event for task operations.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HandleHasher } from './handle-hash.js';
import { writeInfoLine } from './logger.js';
import { rpcMethodLabel, SeriesCache, type GatewayMetrics } from './metrics.js';
import type { TaskObserver } from './task-observer.js';

export interface RequestLogDeps {
  readonly metrics: GatewayMetrics;
  readonly observer: TaskObserver;
  readonly hashHandle: HandleHasher;
}

function taskHandleOf(tg: FastifyRequest['exchange'] | undefined): string | undefined {
  return tg?.createdTask?.handle ?? tg?.task?.handle ?? tg?.requestedHandle;
}

export function registerRequestLog(app: FastifyInstance, { metrics, observer, hashHandle }: RequestLogDeps): void {
  const requestSeries = new SeriesCache<{ requests: { inc(): void }; duration: { observe(value: number): void } }>();
  const pollSeries = new SeriesCache<{ inc(): void }>();
  const operationSeries = new SeriesCache<{ inc(): void }>();
  // Callback style, not async: this runs for every request and has nothing to wait for, so it
  // need not cost a promise and a microtask turn each time.
  app.addHook('onResponse', (request, reply, done) => {
    const tg = request.exchange;
    const message = tg?.mcp?.message;
    const rpcMethod = rpcMethodLabel(message && 'method' in message ? message.method : undefined, message?.kind ?? 'none');
    const route = tg?.route.path ?? 'unmatched';
    const series = requestSeries.get(`${route}\n${request.method}\n${rpcMethod}\n${reply.statusCode}`, () => {
      const labels = { route, method: request.method, rpc_method: rpcMethod };
      return { requests: metrics.httpRequests.labels({ ...labels, status: String(reply.statusCode) }), duration: metrics.httpDuration.labels(labels) };
    });
    series.requests.inc();
    series.duration.observe(reply.elapsedTime / 1000);
    if (request.rejection) metrics.rejectedRequests.inc({ reason: request.rejection });
    const pollOutcome = tg?.pollOutcome;
    if (pollOutcome) pollSeries.get(pollOutcome, () => metrics.polls.labels({ outcome: pollOutcome })).inc();
    if (tg?.taskOutcome && rpcMethod.startsWith('tasks/')) {
      const outcome = reply.statusCode >= 500 ? 'error' : tg.taskOutcome;
      operationSeries.get(`${rpcMethod}\n${outcome}`, () => metrics.taskOperations.labels({ method: rpcMethod, outcome })).inc();
    }
    const handle = taskHandleOf(tg);
    writeInfoLine(
      request.log,
      {
        method: request.method,
        path: route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        rpcMethod: message && 'method' in message ? rpcMethod : undefined,
        era: tg?.mcp?.era,
        upstream: tg?.route.pool.upstream,
        instance: tg?.instance?.url,
        // The hashed key, never the subject: the general log needs correlation, not identity.
        principal: tg?.principalKey,
        // Handles are bearer secrets: the general log gets their salted hash, the audit trail the value.
        task: handle === undefined ? undefined : hashHandle(handle),
        aborted: tg?.abort.aborted || undefined,
      },
      'request',
    );
    observer.requestEnded(request, reply.statusCode);
    done();
  });
}
