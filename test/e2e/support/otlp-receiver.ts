/**
 * A trace collector for tests: an HTTP server on loopback that takes what a real OTLP/HTTP
 * exporter sends (protobuf ExportTraceServiceRequest bodies on /v1/traces) and decodes it with
 * the code protobufjs generated from the official opentelemetry-proto definitions, as shipped
 * in @opentelemetry/otlp-transformer 0.216.0 (the `otlp-definitions` dev dependency). No
 * parser of ours stands between the exporter and the assertions.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import otlp from 'otlp-definitions/build/src/generated/root.js';

/** The generated module's shape, as far as the tests read it (its .d.ts types it loosely). */
interface DecodedValue {
  /** protobufjs's oneof getter: which field of the `value` oneof is set. */
  readonly value?: 'stringValue' | 'boolValue' | 'intValue' | 'doubleValue' | 'arrayValue' | 'kvlistValue' | 'bytesValue';
  readonly stringValue?: string | null;
  readonly boolValue?: boolean | null;
  readonly intValue?: number | { toString(): string } | null;
  readonly doubleValue?: number | null;
}
interface DecodedKeyValue {
  key: string;
  value?: DecodedValue;
}
interface DecodedSpan {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId?: Uint8Array;
  name: string;
  kind: number;
  attributes: DecodedKeyValue[];
  links: { traceId: Uint8Array; spanId: Uint8Array; attributes: DecodedKeyValue[] }[];
  status?: { code?: number; message?: string };
}
interface DecodedRequest {
  resourceSpans: { resource?: { attributes: DecodedKeyValue[] }; scopeSpans: { scope?: { name: string }; spans: DecodedSpan[] }[] }[];
}
interface GeneratedRoot {
  opentelemetry: {
    proto: { collector: { trace: { v1: { ExportTraceServiceRequest: { decode(bytes: Uint8Array): DecodedRequest } } } } };
  };
}

/** OTLP span kinds (opentelemetry.proto.trace.v1.Span.SpanKind). */
export const SPAN_KIND = { SERVER: 2, CLIENT: 3 } as const;
/** OTLP status codes (opentelemetry.proto.trace.v1.Status.StatusCode). */
export const STATUS_CODE = { UNSET: 0, OK: 1, ERROR: 2 } as const;

export type AttributeValue = string | number | boolean | undefined;

/** A span as the tests read it: ids in hex, attributes as a plain record. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, AttributeValue>;
  links: { traceId: string; spanId: string; attributes: Record<string, AttributeValue> }[];
  status: { code: number; message: string };
  serviceName: AttributeValue;
  scope: string | undefined;
}

export interface OtlpReceiver {
  /** The traces endpoint to put in the policy. */
  readonly endpoint: string;
  /** Every span received so far, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** Content types of the export requests, as sent. */
  readonly contentTypes: string[];
  close(): Promise<void>;
}

const hex = (bytes: Uint8Array | undefined): string => (bytes && bytes.length > 0 ? Buffer.from(bytes).toString('hex') : '');

function valueOf(value: DecodedValue | undefined): AttributeValue {
  switch (value?.value) {
    case 'stringValue':
      return value.stringValue ?? '';
    case 'boolValue':
      return value.boolValue ?? false;
    case 'intValue':
      return Number(String(value.intValue));
    case 'doubleValue':
      return value.doubleValue ?? 0;
    default:
      return undefined;
  }
}

function attributesOf(list: DecodedKeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) out[key] = valueOf(value);
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const decoder = (otlp as unknown as GeneratedRoot).opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(String(req.headers['content-type']));
      const decoded = decoder.decode(Buffer.concat(chunks));
      for (const resourceSpans of decoded.resourceSpans) {
        const resource = attributesOf(resourceSpans.resource?.attributes);
        for (const scopeSpans of resourceSpans.scopeSpans) {
          for (const span of scopeSpans.spans) {
            spans.push({
              traceId: hex(span.traceId),
              spanId: hex(span.spanId),
              parentSpanId: hex(span.parentSpanId),
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
              links: span.links.map((link) => ({ traceId: hex(link.traceId), spanId: hex(link.spanId), attributes: attributesOf(link.attributes) })),
              status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
              serviceName: resource['service.name'],
              scope: scopeSpans.scope?.name,
            });
          }
        }
      }
      // An empty ExportTraceServiceResponse: full success.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    contentTypes,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
