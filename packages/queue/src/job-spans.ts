/**
 * A job's spans on its worker: its wait in the queue and its processing, children of the span its
 * sender named in the envelope (`JobEnvelope.traceparent`), so a request is one trace across the
 * hop; the handler runs in the processing span's context, so the spans it starts (a channel
 * slot's wait, each upstream attempt) are that span's children. With tracing off these are the
 * API's no-op spans.
 */
import { SpanKind, context, contextOf, endSpan, trace, traceIdOf, tracer, type Context, type Span } from '@gateway/tracing';
import type { JobEnvelope, QueueName } from '@gateway/contracts';
import type { JobOutcome } from './job-worker.ts';

export interface JobSpan {
  span: Span;
  /** The context the handler runs in (the processing span's). */
  context: Context;
  /** The trace's id when it is sampled, for the request log row. */
  traceId?: string;
}

/** Starts a taken job's processing span, after a span for its wait in the queue (from `queuedAt`, epoch ms). */
export function startJobSpan(queue: QueueName, jobId: string, envelope: Pick<JobEnvelope<unknown>, 'traceparent'>, queuedAt: number): JobSpan {
  const parent = contextOf(envelope.traceparent);
  const attributes = { 'messaging.system': 'bullmq', 'messaging.destination.name': queue, 'messaging.message.id': jobId };
  tracer.startSpan(`wait ${queue}`, { kind: SpanKind.INTERNAL, startTime: queuedAt, attributes }, parent).end();
  const span = tracer.startSpan(`process ${queue}`, { kind: SpanKind.CONSUMER, attributes }, parent);
  return { span, context: trace.setSpan(parent, span), traceId: traceIdOf(span) };
}

/** Ends a job's processing span with its outcome: failed for an error or a job dropped unrun. */
export function endJobSpan(job: JobSpan, outcome: JobOutcome, errorCode?: string): void {
  job.span.setAttribute('gateway.job.outcome', outcome);
  endSpan(job.span, outcome === 'error' || outcome === 'expired' ? errorCode ?? outcome : undefined);
}

/** Runs `work` with the job's span active (the parent of what it starts). */
export const inJobSpan = <T>(job: JobSpan, work: () => T): T => context.with(job.context, work);

/** A span for sending the job's result to its ingress (retried through Redis being away, to the deadline). */
export const startReplySpan = (job: JobSpan): Span => tracer.startSpan('reply', { kind: SpanKind.PRODUCER }, job.context);
