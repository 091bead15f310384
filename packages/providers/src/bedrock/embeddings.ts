/**
 * OpenAI's embeddings on Bedrock, through InvokeModel in each model family's own body: Amazon
 * Titan (`amazon.titan-embed-*`: one text a call, `{inputText, dimensions}` →
 * `{embedding, inputTextTokenCount}`) and Cohere (`cohere.embed-*`: `{texts, input_type}` →
 * `{embeddings}`). The reply is OpenAI's: one vector an input, in the format the client asked
 * for, and usage (Titan's count; Cohere on Bedrock reports none, so the text's estimate).
 * Refused with a 400: token arrays, and several inputs to a Titan model.
 */
import { badRequest, embeddingInputs, estimateTokens, floatsToBase64, upstreamFailure, type EmbeddingRequest, type EmbeddingResponse } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';

const isTitan = (model: string) => /(^|\.)titan-embed/.test(model);

function texts(request: EmbeddingRequest): string[] {
  const inputs = embeddingInputs(request.input);
  if (inputs.some((input) => typeof input !== 'string')) throw badRequest('input: a bedrock channel embeds text, not token arrays', 'input');
  return inputs as string[];
}

function toInvoke(request: EmbeddingRequest, upstreamModel: string): Record<string, unknown> {
  const inputs = texts(request);
  if (!isTitan(upstreamModel)) return { texts: inputs, input_type: 'search_document' };
  if (inputs.length !== 1) throw badRequest('input: a Titan embedding model on a bedrock channel takes one text a request', 'input');
  return { inputText: inputs[0], ...(request.dimensions ? { dimensions: request.dimensions } : {}) };
}

function fromInvoke(raw: unknown, request: EmbeddingRequest): EmbeddingResponse {
  const body = raw as { embedding?: unknown; embeddings?: unknown; inputTextTokenCount?: unknown } | null;
  const vectors = Array.isArray(body?.embeddings) ? body.embeddings : Array.isArray(body?.embedding) ? [body.embedding] : undefined;
  if (!vectors || !vectors.every((vector) => Array.isArray(vector) && vector.every((value) => typeof value === 'number'))) {
    throw upstreamFailure.protocol('the upstream reply has no embedding (neither Titan\'s nor Cohere\'s)');
  }
  const counted = typeof body?.inputTextTokenCount === 'number' ? body.inputTextTokenCount : texts(request).reduce((sum, text) => sum + estimateTokens(text), 0);
  const base64 = request.encoding_format === 'base64';
  return {
    object: 'list',
    data: (vectors as number[][]).map((vector, index) => ({ object: 'embedding', index, embedding: base64 ? floatsToBase64(vector) : vector })),
    model: request.model,
    usage: { prompt_tokens: counted, total_tokens: counted },
  } as EmbeddingResponse;
}

export const embeddings: OperationMapping<EmbeddingRequest, EmbeddingResponse, never> = {
  toUpstream: toInvoke,
  fromReply: fromInvoke,
  fromEvent: () => {
    throw upstreamFailure.protocol('embeddings are not streamed');
  },
  streamEnd: { name: 'the end' },
};
