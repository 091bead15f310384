/**
 * A batch line's span: the root of a trace of its own (a batch of 50,000 lines is not one
 * trace), from the line's start to its result, saying which batch and line it is and, after the
 * GenAI conventions, its operation and model. Its traceparent travels in the line's job, so the
 * worker's spans are its children and the line's request log row has its trace id. A no-op span
 * while tracing is off.
 */
import { GEN_AI, SpanKind, genAiOperationOf, tracer, type Span } from '@gateway/tracing';

export function startLineSpan(batchId: string, line: number, operation: string): Span {
  return tracer.startSpan('batch line', {
    kind: SpanKind.PRODUCER,
    root: true,
    attributes: { 'gateway.batch.id': batchId, 'gateway.batch.line': line, [GEN_AI.operation]: genAiOperationOf(operation) },
  });
}
