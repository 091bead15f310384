/**
 * OpenAI's embeddings on Vertex AI, through `:predict` as Vertex documents its text embedding
 * models (`gemini-embedding-001`, `text-embedding-005`, `text-multilingual-embedding-002`): one
 * instance a text, `{content}`, and `outputDimensionality` for the client's `dimensions`; back,
 * one `predictions[].embeddings.values` a text, and its `statistics.token_count`, summed as the
 * usage. Refused with a 400: token arrays, and several texts to a `gemini-embedding-*` model,
 * which Vertex takes one a request.
 */
import { badRequest, embeddingInputs, estimateTokens, floatsToBase64, UpstreamError, type EmbeddingRequest, type EmbeddingResponse } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';

function texts(request: EmbeddingRequest): string[] {
  const inputs = embeddingInputs(request.input);
  if (inputs.some((input) => typeof input !== 'string')) throw badRequest('input: a vertex channel embeds text, not token arrays', 'input');
  return inputs as string[];
}

function toPredict(request: EmbeddingRequest, upstreamModel: string): Record<string, unknown> {
  const inputs = texts(request);
  if (inputs.length > 1 && /gemini-embedding/.test(upstreamModel)) {
    throw badRequest('input: a gemini-embedding model on a vertex channel takes one text a request', 'input');
  }
  return {
    instances: inputs.map((content) => ({ content })),
    ...(request.dimensions ? { parameters: { outputDimensionality: request.dimensions } } : {}),
  };
}

type Prediction = { embeddings?: { values?: unknown; statistics?: { token_count?: unknown } } };

function fromPredict(raw: unknown, request: EmbeddingRequest): EmbeddingResponse {
  const predictions = (raw as { predictions?: unknown } | null)?.predictions;
  if (!Array.isArray(predictions) || !predictions.every((p: Prediction) => Array.isArray(p?.embeddings?.values) && (p.embeddings.values as unknown[]).every((v) => typeof v === 'number'))) {
    throw new UpstreamError({ kind: 'protocol', message: 'the upstream reply has no predictions with embedding values' });
  }
  const counts = (predictions as Prediction[]).map((p) => p.embeddings!.statistics?.token_count);
  const counted = counts.every((count) => typeof count === 'number')
    ? (counts as number[]).reduce((sum, count) => sum + count, 0)
    : texts(request).reduce((sum, text) => sum + estimateTokens(text), 0);
  const base64 = request.encoding_format === 'base64';
  return {
    object: 'list',
    data: (predictions as Prediction[]).map((p, index) => {
      const values = p.embeddings!.values as number[];
      return { object: 'embedding', index, embedding: base64 ? floatsToBase64(values) : values };
    }),
    model: request.model,
    usage: { prompt_tokens: counted, total_tokens: counted },
  } as EmbeddingResponse;
}

export const embeddings: OperationMapping<EmbeddingRequest, EmbeddingResponse, never> = {
  toUpstream: toPredict,
  fromReply: fromPredict,
  fromEvent: () => {
    throw new UpstreamError({ kind: 'protocol', message: 'embeddings are not streamed' });
  },
  streamEnd: { name: 'the end' },
};
