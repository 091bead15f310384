/**
 * A span's context as a W3C `traceparent` string, and back: what a job carries from its gateway to
 * its worker (and a client sends the gateway), so one request is one trace across the hop. Only
 * the trace and span ids and the sampled flag: nothing of the request.
 */
import { ROOT_CONTEXT, context, propagation, trace, type Context, type Span } from '@opentelemetry/api';

/** `span`'s traceparent; undefined while tracing is off (no propagator is registered). */
export function traceparentOf(span: Span): string | undefined {
  const carrier: { traceparent?: string } = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  return carrier.traceparent;
}

/** The context a traceparent continues (the root one without it, or with tracing off). */
export function contextOf(traceparent: string | string[] | undefined): Context {
  const value = Array.isArray(traceparent) ? traceparent[0] : traceparent;
  return value === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, { traceparent: value });
}
