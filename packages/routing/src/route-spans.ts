/**
 * The router's spans, children of the job's: the wait for a channel slot, and each upstream
 * attempt as a GenAI client span (channel, provider, models, tokens, the upstream's status and
 * time to first byte). A failure says its kind and status only: an upstream's error text may
 * echo the prompt. No-op spans while tracing is off.
 */
import { SpanKind, GEN_AI, endSpan, genAiOperationOf, tracer, type Span } from '@gateway/tracing';
import type { Channel, UpstreamError } from '@gateway/contracts';
import type { Usage } from './usage-ledger.ts';

/** A span for the wait for a lease on a channel at its max_concurrency (or none, when one is free). */
export const startSlotWaitSpan = (): Span => tracer.startSpan('channel slot wait');

/** A span for one upstream call, named as GenAI spans are: `{operation} {model}`. */
export function startAttemptSpan(operation: string | undefined, channel: Channel, upstreamModel: string, attempt: number): Span {
  const name = genAiOperationOf(operation);
  return tracer.startSpan(`${name} ${upstreamModel}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      [GEN_AI.operation]: name,
      [GEN_AI.provider]: channel.type,
      [GEN_AI.requestModel]: upstreamModel,
      'gateway.channel.id': channel.id,
      'gateway.attempt': attempt,
    },
  });
}

/** Ends an attempt's span: its first byte's time, its usage on success, its failure's kind and status. */
export function endAttemptSpan(span: Span, end: { firstByteMs?: number; usage?: Usage; upstreamModel: string; error?: UpstreamError }): void {
  if (span.isRecording()) {
    if (end.firstByteMs !== undefined) span.setAttribute('gateway.upstream.first_byte_ms', Math.round(end.firstByteMs));
    if (end.error?.status) span.setAttribute('http.response.status_code', end.error.status);
    if (!end.error) span.setAttribute(GEN_AI.responseModel, end.upstreamModel);
    if (end.usage?.promptTokens !== undefined) span.setAttribute(GEN_AI.inputTokens, end.usage.promptTokens);
    if (end.usage?.completionTokens !== undefined) span.setAttribute(GEN_AI.outputTokens, end.usage.completionTokens);
  }
  // An HTTP failure's type is its status, as OpenTelemetry's HTTP conventions have it.
  endSpan(span, end.error && (end.error.status ? String(end.error.status) : end.error.kind));
}
