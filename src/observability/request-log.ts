/**
 * One log line and the request metrics for every client request, written once its answer
 * has gone, plus the task observer's audit event for task operations. The pipeline calls it
 * from fastify's onResponse (src/pipeline/request-log-hook.ts) with what it knows of the
 * request: its exchange (undefined for a request no route served) and how its answer went.
 */
import type { ErrorCode } from '../errors.js';
import type { ExchangeRecord } from './exchange-facts.js';
import type { HandleHasher } from './handle-hash.js';
import { writeInfoLine, type RequestLog } from './logger.js';
import { rpcMethodLabel, SeriesCache, type GatewayMetrics } from './metrics.js';
import type { TaskObserver } from './task-observer.js';

export interface RequestLogDeps {
  readonly metrics: GatewayMetrics;
  readonly observer: TaskObserver;
  readonly hashHandle: HandleHasher;
}

/** How a request's answer went, as the listener saw it. */
export interface AnswerFacts {
  readonly httpMethod: string;
  readonly statusCode: number;
  readonly elapsedMs: number;
  /** The catalogue code of the error the gateway answered with, if any. */
  readonly rejection: ErrorCode | undefined;
  readonly log: RequestLog;
}

export type RequestEnded = (exchange: ExchangeRecord | undefined, answer: AnswerFacts) => void;

function taskHandleOf(exchange: ExchangeRecord | undefined): string | undefined {
  return exchange?.createdTask?.handle ?? exchange?.task?.handle ?? exchange?.requestedHandle;
}

export function createRequestLog({ metrics, observer, hashHandle }: RequestLogDeps): RequestEnded {
  const requestSeries = new SeriesCache<{ requests: { inc(): void }; duration: { observe(value: number): void } }>();
  const pollSeries = new SeriesCache<{ inc(): void }>();
  const operationSeries = new SeriesCache<{ inc(): void }>();
  return (exchange, answer) => {
    const message = exchange?.mcp?.message;
    const rpcMethod = rpcMethodLabel(message && 'method' in message ? message.method : undefined, message?.kind ?? 'none');
    const route = exchange?.route.path ?? 'unmatched';
    const { httpMethod, statusCode } = answer;
    const series = requestSeries.get(`${route}\n${httpMethod}\n${rpcMethod}\n${statusCode}`, () => {
      const labels = { route, method: httpMethod, rpc_method: rpcMethod };
      return { requests: metrics.httpRequests.labels({ ...labels, status: String(statusCode) }), duration: metrics.httpDuration.labels(labels) };
    });
    series.requests.inc();
    series.duration.observe(answer.elapsedMs / 1000);
    if (answer.rejection) metrics.rejectedRequests.inc({ reason: answer.rejection });
    const pollOutcome = exchange?.pollOutcome;
    if (pollOutcome) pollSeries.get(pollOutcome, () => metrics.polls.labels({ outcome: pollOutcome })).inc();
    if (exchange?.taskOutcome && rpcMethod.startsWith('tasks/')) {
      const outcome = statusCode >= 500 ? 'error' : exchange.taskOutcome;
      operationSeries.get(`${rpcMethod}\n${outcome}`, () => metrics.taskOperations.labels({ method: rpcMethod, outcome })).inc();
    }
    const handle = taskHandleOf(exchange);
    writeInfoLine(
      answer.log,
      {
        method: httpMethod,
        path: route,
        status: statusCode,
        ms: Math.round(answer.elapsedMs * 10) / 10,
        rpcMethod: message && 'method' in message ? rpcMethod : undefined,
        era: exchange?.mcp?.era,
        upstream: exchange?.route.pool.upstream,
        instance: exchange?.instance?.url,
        // The hashed key, never the subject: the general log needs correlation, not identity.
        principal: exchange?.principalKey,
        // Handles are bearer secrets: the general log gets their salted hash, the audit trail the value.
        task: handle === undefined ? undefined : hashHandle(handle),
        aborted: exchange?.abort.aborted || undefined,
      },
      'request',
    );
    if (exchange) observer.requestEnded(exchange, statusCode);
  };
}
