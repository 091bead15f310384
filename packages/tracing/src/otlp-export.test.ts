/**
 * What the OTLP exporters send, as a real receiver decodes it (@gateway/testkit's, which the
 * end-to-end traces test reads): both of OTLP/HTTP's encodings and gRPC, a parent and its child with
 * their ids, kinds, attributes and status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLP_KIND, OTLP_STATUS, startOtlpReceiver, type OtlpReceiver } from '@gateway/testkit';

let receiver: OtlpReceiver;
beforeAll(async () => void (receiver = await startOtlpReceiver({ grpc: true })));
afterAll(() => receiver.close());

describe.each([
  ['protobuf', (): SpanExporter => new ProtobufExporter({ url: `${receiver.url}/v1/traces` })],
  ['json', (): SpanExporter => new JsonExporter({ url: `${receiver.url}/v1/traces` })],
  ['grpc', (): SpanExporter => new GrpcExporter({ url: receiver.grpcUrl })],
] as const)('an OTLP export over %s', (encoding, exporter) => {
  it('arrives whole: the trace, its parent and child, their attributes and status', async () => {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': `export-${encoding}` }),
      spanProcessors: [new SimpleSpanProcessor(exporter())],
    });
    const tracer = provider.getTracer('test');
    const parent = tracer.startSpan('POST /v1/chat/completions', { kind: SpanKind.SERVER, attributes: { 'http.response.status_code': 200 } });
    const child = tracer.startSpan('chat gpt-x', { kind: SpanKind.CLIENT, attributes: { 'gen_ai.request.model': 'gpt-x', 'gen_ai.usage.input_tokens': 12 } }, trace.setSpan(ROOT_CONTEXT, parent));
    child.setStatus({ code: SpanStatusCode.ERROR, message: '500' });
    child.end();
    parent.end();
    await provider.forceFlush();
    await provider.shutdown();

    const { traceId, spanId } = parent.spanContext();
    const spans = receiver.trace(traceId);
    expect(receiver.requests[encoding]).toBeGreaterThan(0);
    expect(spans.map((span) => span.name).sort()).toEqual(['POST /v1/chat/completions', 'chat gpt-x']);
    const [server, client] = [spans.find((s) => s.kind === OTLP_KIND.server)!, spans.find((s) => s.kind === OTLP_KIND.client)!];
    expect(server).toMatchObject({ service: `export-${encoding}`, spanId, attributes: { 'http.response.status_code': 200 } });
    expect(server.parentSpanId).toBeUndefined();
    expect(client).toMatchObject({ parentSpanId: spanId, attributes: { 'gen_ai.request.model': 'gpt-x', 'gen_ai.usage.input_tokens': 12 }, status: { code: OTLP_STATUS.error, message: '500' } });
    expect(client.endNs).toBeGreaterThanOrEqual(client.startNs);
  });
});
