/**
 * Gemini's embedding request served by an OpenAI-style upstream: each request's text one input
 * of `/v1/embeddings` (floats asked for, `outputDimensionality` as `dimensions`), and the vectors
 * back in Gemini's order, with the upstream's prompt tokens for the charge.
 */
import { geminiEmbedTexts, upstreamFailure, type GeminiBatchEmbedRequest, type GeminiEmbedReply } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';
import { embeddings } from './embeddings.ts';

/** One `dimensions` for the whole call: requests asking different ones cannot be one OpenAI call. */
function dimensionsOf(request: GeminiBatchEmbedRequest): number | undefined {
  const asked = new Set(request.requests.map((one) => one.outputDimensionality));
  if (asked.size > 1) {
    throw upstreamFailure.badRequest('this model takes one outputDimensionality for every request of a batch');
  }
  return [...asked][0];
}

export const embedContent: OperationMapping<GeminiBatchEmbedRequest, GeminiEmbedReply, never> = {
  toUpstream: (request, upstreamModel) => {
    const dimensions = dimensionsOf(request);
    return { model: upstreamModel, input: geminiEmbedTexts(request), encoding_format: 'float', ...(dimensions !== undefined ? { dimensions } : {}) };
  },
  fromReply: (raw, request) => {
    const reply = embeddings.fromReply(raw, { model: '', input: '', encoding_format: 'float' });
    const vectors = [...reply.data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    if (vectors.length !== request.requests.length || vectors.some((item) => !Array.isArray(item.embedding))) {
      throw upstreamFailure.protocol(`the upstream reply has ${vectors.length} embeddings for ${request.requests.length} inputs`);
    }
    return { embeddings: vectors.map((item) => ({ values: item.embedding as number[] })), promptTokens: reply.usage.prompt_tokens || undefined };
  },
  fromEvent: () => {
    throw upstreamFailure.protocol('embeddings are not streamed');
  },
  streamEnd: { name: 'the end' },
};
