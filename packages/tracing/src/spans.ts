/** The tracer every package starts its spans on, and the few ways they end. */
import { SpanStatusCode, TraceFlags, trace, type Span } from '@opentelemetry/api';

/** One tracer for the whole gateway; a no-op until `startTracing` registers a provider. */
export const tracer = trace.getTracer('ai-gateway');

/** The span's trace id when it is sampled (it will be exported); undefined otherwise, or with tracing off. */
export function traceIdOf(span: Span | undefined): string | undefined {
  const context = span?.spanContext();
  return context && (context.traceFlags & TraceFlags.SAMPLED) !== 0 ? context.traceId : undefined;
}

/**
 * Ends a span as failed: its status says what kind of failure (`error.type`), never the text of
 * an upstream's error, which may echo a prompt.
 */
export function failSpan(span: Span, errorType: string, endTime?: number): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
  span.end(endTime);
}

/** Ends a span as it went: failed with `errorType`, or fine when that is unset. */
export function endSpan(span: Span, errorType?: string, endTime?: number): void {
  if (errorType) failSpan(span, errorType, endTime);
  else span.end(endTime);
}
