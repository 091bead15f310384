/**
 * A model job's processing span (started by the job worker: job-spans.ts in @gateway/queue)
 * described after the GenAI semantic conventions: the operation and the model asked for, and
 * once the job ends, the upstream model that answered and the tokens it used. Never the prompt,
 * the reply, a key or a user's name. Nothing is done when the span is not recorded (tracing off,
 * or the trace not sampled).
 */
import { GEN_AI, genAiOperationOf, trace } from '@gateway/tracing';
import type { JobHandler } from '@gateway/queue';
import type { RouteRecord } from '@gateway/routing';
import { requestedModel, type ModelPayload } from './request-log-row.ts';

export function describedAsGenAi<P extends ModelPayload>(handler: JobHandler<P>): JobHandler<P> {
  return async (context) => {
    const span = trace.getActiveSpan();
    if (!span?.isRecording()) return handler(context);
    span.setAttributes({ [GEN_AI.operation]: genAiOperationOf(context.payload.operation), [GEN_AI.requestModel]: requestedModel(context.payload) });
    try {
      return await handler(context);
    } finally {
      const record = context.facts.route as RouteRecord | undefined;
      if (record?.upstreamModel) span.setAttribute(GEN_AI.responseModel, record.upstreamModel);
      if (record?.usage?.promptTokens !== undefined) span.setAttribute(GEN_AI.inputTokens, record.usage.promptTokens);
      if (record?.usage?.completionTokens !== undefined) span.setAttribute(GEN_AI.outputTokens, record.usage.completionTokens);
    }
  };
}
