/**
 * A conversation reply as Gemini's GenerateContentResponse (see door.ts): thinking as thought
 * parts (their signature as `thoughtSignature`), tool uses as `functionCall` parts with their id,
 * so a client that sends the call back pairs its response by id; usage in Gemini's fields.
 * Dropped: redacted thinking (Gemini has no part that holds it).
 */
import { promptTokensOf, withCacheWrites, type ConversationPart, type ConversationReply, type ConversationUsage, type GeminiChatRequest, type GeminiGenerateResponse, type StopReason } from '@gateway/contracts';

export type GeminiResponsePart = Record<string, unknown>;

export function geminiPartOf(part: ConversationPart): GeminiResponsePart | undefined {
  switch (part.type) {
    case 'text':
      return { text: part.text };
    case 'thinking':
      return { text: part.thinking, thought: true, ...(part.signature ? { thoughtSignature: part.signature } : {}) };
    case 'tool_use':
      return { functionCall: { id: part.id, name: part.name, args: part.input } };
    default:
      return undefined;
  }
}

const FINISH_REASONS: Record<StopReason, string> = { end_turn: 'STOP', stop_sequence: 'STOP', tool_use: 'STOP', pause_turn: 'STOP', max_tokens: 'MAX_TOKENS', refusal: 'SAFETY' };
export const geminiFinishReasonOf = (stopReason: StopReason) => FINISH_REASONS[stopReason];

/**
 * Gemini counts cached tokens inside `promptTokenCount` and thoughts outside
 * `candidatesTokenCount`. A provider that reported nothing gives no usageMetadata, so the worker
 * estimates it rather than charge 0.
 */
export function usageMetadataOf(usage: Partial<ConversationUsage>): GeminiGenerateResponse['usageMetadata'] {
  const output = usage.outputTokens ?? 0;
  const promptTokenCount = promptTokensOf({ inputTokens: usage.inputTokens ?? 0, outputTokens: output, ...usage });
  if (promptTokenCount === 0 && output === 0) return undefined;
  const thoughts = usage.reasoningTokens;
  const wire = {
    promptTokenCount,
    candidatesTokenCount: Math.max(0, output - (thoughts ?? 0)),
    totalTokenCount: promptTokenCount + output,
    ...(usage.cacheReadTokens !== undefined ? { cachedContentTokenCount: usage.cacheReadTokens } : {}),
    ...(thoughts !== undefined ? { thoughtsTokenCount: thoughts } : {}),
  };
  // Gemini's usage has no field for cache writes: carried beside the wire's, for the charge and the log.
  return withCacheWrites(wire, usage.cacheWriteTokens);
}

/** One candidate's response, as a whole reply or one stream event carries it. */
export function geminiResponse(request: GeminiChatRequest, id: string, parts: GeminiResponsePart[], end?: { stopReason: StopReason; usage: Partial<ConversationUsage> }): GeminiGenerateResponse {
  const candidate: Record<string, unknown> = { content: { role: 'model', parts }, index: 0 };
  const response: Record<string, unknown> = { candidates: [candidate] };
  if (end) {
    candidate.finishReason = geminiFinishReasonOf(end.stopReason);
    const usage = usageMetadataOf(end.usage);
    if (usage) response.usageMetadata = usage;
  }
  response.modelVersion = request.model ?? '';
  response.responseId = id;
  return response as GeminiGenerateResponse;
}

export function conversationToGemini(reply: ConversationReply, request: GeminiChatRequest): GeminiGenerateResponse {
  const parts = reply.parts.map(geminiPartOf).filter((part) => part !== undefined);
  return geminiResponse(request, reply.id, parts.length > 0 ? parts : [{ text: '' }], { stopReason: reply.stopReason, usage: reply.usage });
}
