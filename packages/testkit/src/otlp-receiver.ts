/**
 * A real OTLP trace receiver, as a collector would be. Over HTTP: `POST /v1/traces` with an
 * ExportTraceServiceRequest in either of OTLP's encodings, protobuf (`application/x-protobuf`,
 * decoded with protobufjs from the proto definitions of the fields read here) or JSON
 * (`application/json`: ids in hex, enums as numbers, 64-bit integers as strings or numbers),
 * gzip'd or not, answered 200 with an empty ExportTraceServiceResponse in the request's
 * encoding. Over gRPC when asked: TraceService's Export, the same protobuf. It keeps every span,
 * flattened, for a test to read.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { Server, ServerCredentials, type ServiceDefinition, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { freePort } from '@gateway/local-stack';

/** OTLP's SpanKind and status codes, as a received span has them. */
export const OTLP_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;
export const OTLP_STATUS = { unset: 0, ok: 1, error: 2 } as const;

/** One span as received, with its process's `service.name`. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** Unset for a trace's root span. */
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind (`OTLP_KIND`). */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, string | number | boolean>;
  /** OTLP's status code (`OTLP_STATUS`). */
  status: { code: number; message?: string };
}

export interface OtlpReceiver {
  /** The base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`); the exporters add `/v1/traces`. */
  url: string;
  /** The gRPC endpoint, when started with `grpc` (`OTEL_EXPORTER_OTLP_ENDPOINT` with `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`). */
  grpcUrl?: string;
  /** Every span received so far, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[];
  /** Export requests received, by encoding (gRPC's counted apart). */
  readonly requests: { protobuf: number; json: number; grpc: number };
  close(): Promise<void>;
}

// The fields of opentelemetry/proto/{collector/trace,trace,common,resource}/v1 a test reads,
// with their numbers as OTLP defines them; the rest are skipped as unknown fields.
const OTLP_PROTO = `
syntax = "proto3";
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { repeated Span spans = 2; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6;
  fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9; Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; } }
`;
const ExportRequest = protobuf.parse(OTLP_PROTO, { keepCase: false }).root.lookupType('ExportTraceServiceRequest');

/** An ExportTraceServiceRequest as plain objects, in OTLP JSON's shape (lowerCamelCase, ids in hex). */
interface ExportJson {
  resourceSpans?: {
    resource?: { attributes?: KeyValueJson[] };
    scopeSpans?: { spans?: SpanJson[] }[];
  }[];
}
interface KeyValueJson { key: string; value?: { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number } }
interface SpanJson {
  traceId: string; spanId: string; parentSpanId?: string; name: string; kind?: number;
  startTimeUnixNano: string | number; endTimeUnixNano: string | number; attributes?: KeyValueJson[]; status?: { code?: number; message?: string };
}

function attributesOf(list: KeyValueJson[] = []): Record<string, string | number | boolean> {
  const attributes: Record<string, string | number | boolean> = {};
  for (const { key, value = {} } of list) {
    if (value.stringValue !== undefined) attributes[key] = value.stringValue;
    else if (value.boolValue !== undefined) attributes[key] = value.boolValue;
    else if (value.intValue !== undefined) attributes[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) attributes[key] = value.doubleValue;
  }
  return attributes;
}

/** The protobuf message as OTLP JSON would have it: ids as hex, 64-bit integers as strings. */
function protobufAsJson(body: Buffer): ExportJson {
  const request = ExportRequest.toObject(ExportRequest.decode(body), { bytes: String, longs: String, enums: Number, defaults: false }) as ExportJson;
  // protobufjs gives bytes in base64; OTLP JSON has ids in hex.
  const hex = (base64: string | undefined) => base64 && Buffer.from(base64, 'base64').toString('hex');
  for (const resourceSpans of request.resourceSpans ?? []) {
    for (const span of (resourceSpans.scopeSpans ?? []).flatMap((scope) => scope.spans ?? [])) {
      Object.assign(span, { traceId: hex(span.traceId), spanId: hex(span.spanId), parentSpanId: hex(span.parentSpanId) });
    }
  }
  return request;
}

function spansOf(request: ExportJson): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          service,
          traceId: span.traceId,
          spanId: span.spanId,
          ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
          name: span.name,
          kind: span.kind ?? 0,
          startNs: BigInt(span.startTimeUnixNano),
          endNs: BigInt(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          status: { code: span.status?.code ?? 0, ...(span.status?.message ? { message: span.status.message } : {}) },
        });
      }
    }
  }
  return spans;
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return request.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

/** TraceService as OTLP's gRPC defines it: one unary call, the request's protobuf in, an empty response out. */
const TRACE_SERVICE: ServiceDefinition = {
  Export: {
    path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
    requestStream: false,
    responseStream: false,
    requestSerialize: (value: Buffer) => value,
    requestDeserialize: (bytes: Buffer) => bytes,
    responseSerialize: () => Buffer.alloc(0),
    responseDeserialize: () => ({}),
  },
};

/** Starts a gRPC server for TraceService on a free port; resolves with it and its endpoint. */
async function startGrpc(received: (body: Buffer) => void): Promise<{ server: Server; url: string }> {
  const server = new Server();
  server.addService(TRACE_SERVICE, {
    Export: (call: ServerUnaryCall<Buffer, unknown>, callback: sendUnaryData<unknown>) => {
      received(call.request);
      callback(null, {});
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound)));
  });
  return { server, url: `http://127.0.0.1:${port}` };
}

/**
 * Starts a receiver on `port` (OTLP/HTTP's default is 4318; rejects when it is taken), or a
 * free one; with `grpc`, a gRPC one beside it.
 */
export async function startOtlpReceiver(options: { port?: number; grpc?: boolean } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests = { protobuf: 0, json: 0, grpc: 0 };
  const server = createServer((request, response) => {
    if (request.method !== 'POST' || request.url !== '/v1/traces') {
      response.writeHead(404).end();
      return;
    }
    const json = (request.headers['content-type'] ?? '').startsWith('application/json');
    bodyOf(request).then((body) => {
      spans.push(...spansOf(json ? JSON.parse(body.toString('utf8')) as ExportJson : protobufAsJson(body)));
      requests[json ? 'json' : 'protobuf']++;
      // An empty ExportTraceServiceResponse: `{}`, or no bytes at all in protobuf.
      response.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    }, () => response.writeHead(400).end());
  });
  const port = options.port ?? await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const grpc = options.grpc
    ? await startGrpc((body) => {
      spans.push(...spansOf(protobufAsJson(body)));
      requests.grpc++;
    })
    : undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    ...(grpc ? { grpcUrl: grpc.url } : {}),
    spans,
    requests,
    trace: (traceId) => spans.filter((span) => span.traceId === traceId),
    close: async () => {
      grpc?.server.forceShutdown();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
