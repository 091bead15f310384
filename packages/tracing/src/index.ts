/**
 * @gateway/tracing owns OpenTelemetry traces: starting the SDK from the `OTEL_*` variables
 * (start-tracing.ts), the tracer every package starts its spans on, and the trace context a job
 * carries from the gateway to its worker (trace-context.ts). Everything but `startTracing` is
 * the OpenTelemetry API alone, a no-op while tracing is off.
 */
export { startTracing, tracesExporters, otlpProtocol, type Tracing } from './start-tracing.ts';
export { tracer, traceIdOf, endSpan, failSpan } from './spans.ts';
export { contextOf, traceparentOf } from './trace-context.ts';
export { GEN_AI, genAiOperationOf } from './gen-ai.ts';
export { SpanKind, SpanStatusCode, context, trace, type Context, type Span } from '@opentelemetry/api';
