/**
 * Embeddings against an OpenAI-compatible upstream: the body passed on with the channel's model,
 * the reply given the client's model name and a complete `usage`.
 */
import { UpstreamError, type EmbeddingRequest, type EmbeddingResponse, tokenCount } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';
import { asObject, rejectErrorBody } from './complete.ts';

const int = tokenCount;

export function fromUpstreamEmbeddings(raw: unknown, requestedModel: string): EmbeddingResponse {
  const body = asObject(raw, 'reply');
  rejectErrorBody(body);
  if (!Array.isArray(body.data)) throw new UpstreamError({ kind: 'protocol', message: 'the upstream reply has no data' });
  const usage = (body.usage ?? {}) as { prompt_tokens?: unknown; total_tokens?: unknown };
  const prompt = int(usage.prompt_tokens);
  return {
    ...body,
    object: 'list',
    data: body.data as EmbeddingResponse['data'],
    model: requestedModel,
    usage: { prompt_tokens: prompt, total_tokens: usage.total_tokens != null ? int(usage.total_tokens) : prompt },
  };
}

/** `POST /v1/embeddings`: never streamed. */
export const embeddings: OperationMapping<EmbeddingRequest, EmbeddingResponse, never> = {
  toUpstream: (request, upstreamModel) => ({ ...request, model: upstreamModel }),
  fromReply: (raw, request) => fromUpstreamEmbeddings(raw, request.model),
  fromEvent: () => {
    throw new UpstreamError({ kind: 'protocol', message: 'embeddings are not streamed' });
  },
  streamEnd: { name: 'the end' },
};
