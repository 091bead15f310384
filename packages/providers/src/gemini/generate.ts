/**
 * Gemini's generateContent (speech or chat) against a Gemini-style upstream: the request sent to the channel's model,
 * and the reply (or each stream event) checked against the wire format with `safetyRatings`
 * always present.
 */
import { geminiGenerateResponse, upstreamFailure, type GeminiContentRequest, type GeminiGenerateResponse } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';

/**
 * The body sent upstream: the client's body as validated, unknown-to-us Gemini fields included.
 * A `model` in the body is dropped: the path carries the channel's model, and Gemini refuses a
 * body whose model disagrees with the path.
 */
export function geminiUpstreamRequest(request: GeminiContentRequest): Record<string, unknown> {
  const { model: _model, ...body } = request;
  return body;
}

/** The upstream's reply (or stream event) as the client sees it. */
export function fromUpstreamResponse(raw: unknown): GeminiGenerateResponse {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw upstreamFailure.protocol('the upstream reply is not a JSON object');
  }
  const body = raw as Record<string, unknown>;
  // Gemini reports a failure inside a 200 stream as an event holding `{error}`.
  if (body.error && !body.candidates) {
    const error = body.error as { code?: unknown; message?: unknown };
    throw upstreamFailure.http(typeof error.code === 'number' && error.code >= 400 ? error.code : 502, `upstream error: ${typeof error.message === 'string' ? error.message : 'unknown'}`, { body });
  }
  const parsed = geminiGenerateResponse.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw upstreamFailure.protocol(`the upstream reply does not follow the Gemini format at ${issue.path.join('.') || 'its root'}: ${issue.message}`);
  }
  return parsed.data;
}

/**
 * `:generateContent`, or `:streamGenerateContent?alt=sse` for a stream of events. Gemini ends a
 * stream without `[DONE]`: the last event carries the finishReason, and a stream that stops
 * before one is reported as broken.
 */
export const generateContent: OperationMapping<GeminiContentRequest, GeminiGenerateResponse, GeminiGenerateResponse> = {
  toUpstream: geminiUpstreamRequest,
  fromReply: fromUpstreamResponse,
  fromEvent: fromUpstreamResponse,
  streamEnd: { name: 'its finishReason', isLast: (event) => event.candidates?.some((candidate) => candidate.finishReason) === true },
};
