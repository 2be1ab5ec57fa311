/**
 * `tracing`: OpenTelemetry traces, exported over OTLP/HTTP (protobuf) to a collector. Off
 * unless the policy says `mode: otlp`; off, the gateway builds no tracer and touches no
 * request for it (docs/operations.md, "Tracing").
 */
import { z } from 'zod';
import { durationSchema } from '../units.js';

function endpointProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'expected an http(s) URL such as http://otel-collector:4318/v1/traces';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'expected an http or https URL';
  // Credentials in a URL end up in logs and process listings; headers carry them instead.
  if (url.username || url.password) return 'must not contain credentials; use tracing.headers';
  return undefined;
}

const endpointSchema = z.string().superRefine((value, ctx) => {
  const problem = endpointProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const noTracingSchema = z
  .strictObject({
    mode: z.literal('none').describe('No tracing: no tracer is built and no request pays for one (the default).'),
  })
  .describe('Tracing off.');

const otlpTracingSchema = z
  .strictObject({
    mode: z.literal('otlp').describe('Spans are batched and exported over OTLP/HTTP with protobuf bodies.'),
    endpoint: endpointSchema
      .default('http://127.0.0.1:4318/v1/traces')
      .describe('The full URL of the collector\'s OTLP/HTTP traces endpoint, path included (…/v1/traces), used as written.'),
    headers: z
      .record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, { error: 'expected an HTTP header name' }), z.string())
      .default({})
      .describe('Headers sent with every export, such as an API key for a hosted collector, normally "${NAME}" from the environment; never logged.'),
    serviceName: z.string().min(1).default('taskgate').describe('The service.name resource attribute of every span.'),
    sampling: z
      .strictObject({
        ratio: z
          .number()
          .min(0)
          .max(1)
          .default(1)
          .describe('Share of new traces recorded, from 0 to 1 (0.01 is 1%), decided by trace id so every replica agrees.'),
        parent: z
          .enum(['follow', 'ignore'])
          .default('follow')
          .describe(
            'follow: a request whose client sent a W3C traceparent is recorded exactly when the client recorded it ' +
              '(its sampled flag), and ratio applies to the rest; ignore: ratio applies to every request, so a ' +
              'client cannot make the gateway record more than the ratio.',
          ),
      })
      .prefault({})
      .describe('Which requests are recorded. Context is propagated to the backend for every request, recorded or not.'),
    exportTimeout: durationSchema()
      .prefault('10s')
      .refine((ms) => ms > 0, { error: 'must be more than 0ms' })
      .describe('Longest wait for the collector to accept one batch; a batch it refuses or misses is dropped, and a warning logged.'),
    maxQueueSize: z
      .int()
      .min(1)
      .default(2048)
      .describe('Ended spans held for export at most; past it new spans are dropped (a slow or absent collector never holds memory unbounded).'),
  })
  .describe('Tracing on: spans go to an OpenTelemetry collector over OTLP/HTTP.');

export const tracingSchema = z
  .discriminatedUnion('mode', [noTracingSchema, otlpTracingSchema])
  .describe(
    'OpenTelemetry traces: one server span per client request and one client span per upstream call, named and ' +
      'attributed by the OpenTelemetry conventions for MCP, with W3C trace context taken from the client and passed ' +
      'on to the backend (docs/operations.md, "Tracing"). Read when the policy is loaded.',
  );

export type TracingConfig = z.output<typeof tracingSchema>;
export type OtlpTracingConfig = Extract<TracingConfig, { mode: 'otlp' }>;
