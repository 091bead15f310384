/**
 * Embeddings on Vertex AI, through `:predict` as Vertex documents its text embedding models
 * (`gemini-embedding-001`, `text-embedding-005`, `text-multilingual-embedding-002`): one instance
 * a text, `{content}` (with Gemini's `taskType` and `title` as `task_type` and `title`), and
 * `outputDimensionality` for the client's `dimensions`; back, one
 * `predictions[].embeddings.values` a text, and its `statistics.token_count`, summed as the
 * usage. For OpenAI's `/v1/embeddings` (`embeddings`) and Gemini's `:batchEmbedContents` door
 * (`embedContent`). Refused with a 400: token arrays, and several texts to a `gemini-embedding-*`
 * model, which Vertex takes one a request.
 */
import { badRequest, embeddingInputs, estimateTokens, floatsToBase64, upstreamFailure, type EmbeddingRequest, type EmbeddingResponse, type GeminiBatchEmbedRequest, type GeminiEmbedReply } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';

function texts(request: EmbeddingRequest): string[] {
  const inputs = embeddingInputs(request.input);
  if (inputs.some((input) => typeof input !== 'string')) throw badRequest('input: a vertex channel embeds text, not token arrays', 'input');
  return inputs as string[];
}

type Instance = { content: string; task_type?: string; title?: string };

function predictBody(instances: Instance[], dimensions: number | undefined, upstreamModel: string, param: string): Record<string, unknown> {
  if (instances.length > 1 && /gemini-embedding/.test(upstreamModel)) {
    throw badRequest(`${param}: a gemini-embedding model on a vertex channel takes one text a request`, param);
  }
  return { instances, ...(dimensions ? { parameters: { outputDimensionality: dimensions } } : {}) };
}

/** The vectors of a `:predict` reply, and the tokens Vertex counted (undefined when any is missing). */
function predicted(raw: unknown): { vectors: number[][]; tokens?: number } {
  type Prediction = { embeddings?: { values?: unknown; statistics?: { token_count?: unknown } } };
  const predictions = (raw as { predictions?: unknown } | null)?.predictions;
  if (!Array.isArray(predictions) || !predictions.every((p: Prediction) => Array.isArray(p?.embeddings?.values) && (p.embeddings.values as unknown[]).every((v) => typeof v === 'number'))) {
    throw upstreamFailure.protocol('the upstream reply has no predictions with embedding values');
  }
  const counts = (predictions as Prediction[]).map((p) => p.embeddings!.statistics?.token_count);
  const tokens = counts.every((count) => typeof count === 'number') ? (counts as number[]).reduce((sum, count) => sum + count, 0) : undefined;
  return { vectors: (predictions as Prediction[]).map((p) => p.embeddings!.values as number[]), tokens };
}

function fromPredict(raw: unknown, request: EmbeddingRequest): EmbeddingResponse {
  const { vectors, tokens } = predicted(raw);
  const counted = tokens ?? texts(request).reduce((sum, text) => sum + estimateTokens(text), 0);
  const base64 = request.encoding_format === 'base64';
  return {
    object: 'list',
    data: vectors.map((values, index) => ({ object: 'embedding', index, embedding: base64 ? floatsToBase64(values) : values })),
    model: request.model,
    usage: { prompt_tokens: counted, total_tokens: counted },
  } as EmbeddingResponse;
}

export const embeddings: OperationMapping<EmbeddingRequest, EmbeddingResponse, never> = {
  toUpstream: (request, upstreamModel) => predictBody(texts(request).map((content) => ({ content })), request.dimensions ?? undefined, upstreamModel, 'input'),
  fromReply: fromPredict,
  fromEvent: () => {
    throw upstreamFailure.protocol('embeddings are not streamed');
  },
  streamEnd: { name: 'the end' },
};

/** Gemini's `:batchEmbedContents` door: each request of the batch an instance; `outputDimensionality` the first request's. */
export const embedContent: OperationMapping<GeminiBatchEmbedRequest, GeminiEmbedReply, never> = {
  toUpstream: (request, upstreamModel) => {
    const instances = request.requests.map((one) => ({
      content: one.content.parts.map((part) => part.text).join(''),
      ...(one.taskType ? { task_type: one.taskType } : {}),
      ...(one.title ? { title: one.title } : {}),
    }));
    return predictBody(instances, request.requests.find((one) => one.outputDimensionality)?.outputDimensionality, upstreamModel, 'requests');
  },
  fromReply: (raw) => {
    const { vectors, tokens } = predicted(raw);
    return { embeddings: vectors.map((values) => ({ values })), ...(tokens !== undefined ? { promptTokens: tokens } : {}) };
  },
  fromEvent: () => {
    throw upstreamFailure.protocol('embeddings are not streamed');
  },
  streamEnd: { name: 'the end' },
};
