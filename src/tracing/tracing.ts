/**
 * The tracing of one policy (`tracing.mode: otlp`): a tracer provider of its own, not the
 * OpenTelemetry global one, with the policy's sampler, and a batch processor exporting over
 * OTLP/HTTP (protobuf). It hangs off the policy snapshot like everything else built from the
 * policy, and is undefined with tracing off, so nothing on the request path builds a span,
 * reads a traceparent or rewrites a body then.
 */
import type { Tracer } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import type { TracingConfig } from '../config/sections/tracing.js';
import type { HandleHasher } from '../observability/handle-hash.js';
import { RequestTrace, type TracedRequest, type SpanSource } from './request-trace.js';
import { startTaskCall, type TaskCallOptions, type TaskCallSpan } from './task-calls.js';

export interface TracingDeps {
  readonly logger: Logger;
  readonly hashHandle: HandleHasher;
}

/** The instrumentation scope of every span. */
const SCOPE = 'taskgate';

export class Tracing implements SpanSource {
  readonly tracer: Tracer;
  readonly hashHandle: HandleHasher;
  private readonly provider: BasicTracerProvider;

  private constructor(provider: BasicTracerProvider, hashHandle: HandleHasher) {
    this.provider = provider;
    this.tracer = provider.getTracer(SCOPE);
    this.hashHandle = hashHandle;
  }

  /** The policy's tracing, or undefined when it has none (mode none). */
  static create(config: TracingConfig, deps: TracingDeps): Tracing | undefined {
    if (config.mode === 'none') return undefined;
    const ratio = new TraceIdRatioBasedSampler(config.sampling.ratio);
    const sampler: Sampler = config.sampling.parent === 'follow' ? new ParentBasedSampler({ root: ratio }) : ratio;
    const exporter = new OTLPTraceExporter({ url: config.endpoint, headers: { ...config.headers }, timeoutMillis: config.exportTimeout });
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }),
      sampler,
      spanProcessors: [
        new BatchSpanProcessor(new LoggedExporter(exporter, deps.logger), {
          maxQueueSize: config.maxQueueSize,
          exportTimeoutMillis: config.exportTimeout,
        }),
      ],
    });
    return new Tracing(provider, deps.hashHandle);
  }

  /** The spans of one client request; called as the request starts (the exchange's trace). */
  traceRequest(request: TracedRequest): RequestTrace {
    return new RequestTrace(this, request);
  }

  /** A client span for a call the gateway makes to a backend for a task (see task-calls.ts). */
  startTaskCall(options: TaskCallOptions): TaskCallSpan {
    return startTaskCall(this, options);
  }

  /** Exports every ended span now (tests, and before a planned stop). */
  async flush(): Promise<void> {
    await this.provider.forceFlush();
  }

  /**
   * Exports what is left and stops. Spans that requests still running on this policy end
   * afterwards are dropped: a policy is closed once its requests are done.
   */
  async close(): Promise<void> {
    await this.provider.shutdown();
  }
}

/**
 * The OTLP exporter, with its failures in the gateway's log: once when exports start
 * failing and once when they work again, not for every batch of an outage. The export
 * headers (credentials) never appear in the log.
 */
class LoggedExporter implements SpanExporter {
  private failing = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly logger: Logger,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) {
        if (!this.failing) this.logger.warn({ err: result.error, spans: spans.length }, 'could not export spans to the trace collector; dropping them and trying again with the next batch');
        this.failing = true;
      } else if (this.failing) {
        this.logger.info('spans reach the trace collector again');
        this.failing = false;
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
