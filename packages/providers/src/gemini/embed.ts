/**
 * OpenAI embeddings served by a Gemini-style upstream, through `:batchEmbedContents`: each input
 * one request of the batch, the vectors back in OpenAI's list (floats, or base64 when asked).
 * Gemini takes text only, and reports no usage: the tokens are estimated (`estimateTokens`: by
 * UTF-8 bytes beyond ASCII), as for any upstream that reports none.
 */
import { embeddingInputs, estimateTokens, floatsToBase64, upstreamFailure, type EmbeddingRequest, type EmbeddingResponse } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';

/** A token-id input cannot be sent to Gemini, which embeds text: the caller's 400, not the channel's fault. */
function textsOf(request: EmbeddingRequest): string[] {
  return embeddingInputs(request.input).map((input) => {
    if (typeof input !== 'string') {
      throw upstreamFailure.badRequest('this model embeds text only: input must be a string or an array of strings, not token ids');
    }
    return input;
  });
}

export function toBatchEmbedRequest(request: EmbeddingRequest, upstreamModel: string): Record<string, unknown> {
  const model = `models/${upstreamModel.replace(/^models\//, '')}`;
  return {
    requests: textsOf(request).map((text) => ({
      model,
      content: { parts: [{ text }] },
      ...(request.dimensions != null ? { outputDimensionality: request.dimensions } : {}),
    })),
  };
}

export function fromBatchEmbedReply(raw: unknown, request: EmbeddingRequest): EmbeddingResponse {
  const embeddings = (raw as { embeddings?: unknown } | null)?.embeddings;
  if (!Array.isArray(embeddings) || embeddings.some((e) => !Array.isArray((e as { values?: unknown })?.values))) {
    throw upstreamFailure.protocol('the upstream reply has no embeddings with values');
  }
  const base64 = request.encoding_format === 'base64';
  const prompt = textsOf(request).reduce((sum, text) => sum + estimateTokens(text), 0);
  return {
    object: 'list',
    data: embeddings.map((e, index) => {
      const values = (e as { values: number[] }).values;
      return { object: 'embedding', index, embedding: base64 ? floatsToBase64(values) : values };
    }),
    model: request.model,
    usage: { prompt_tokens: prompt, total_tokens: prompt },
  };
}

export const embed: OperationMapping<EmbeddingRequest, EmbeddingResponse, never> = {
  toUpstream: toBatchEmbedRequest,
  fromReply: fromBatchEmbedReply,
  fromEvent: () => {
    throw upstreamFailure.protocol('embeddings are not streamed');
  },
  streamEnd: { name: 'the end' },
};
