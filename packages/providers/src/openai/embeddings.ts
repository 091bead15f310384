/**
 * Embeddings against an OpenAI-compatible upstream: the body passed on with the channel's model,
 * the reply given the client's model name, a complete `usage`, and its vectors in the format the
 * client asked for, whatever the upstream sent.
 */
import { base64ToFloats, floatsToBase64, tokenCount, upstreamFailure, type Embedding, type EmbeddingRequest, type EmbeddingResponse } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';
import { asObject, rejectErrorBody } from './complete.ts';

const int = tokenCount;

/**
 * One vector in the format asked for. Servers that ignore `encoding_format` (several
 * OpenAI-compatible ones) send floats to a client that asked base64, the openai SDK's default,
 * which then decodes the JSON text of the floats as bytes: garbage vectors, and no error.
 */
function inFormat(item: Embedding, format: 'float' | 'base64'): Embedding {
  const vector = item?.embedding;
  if (format === 'base64' && Array.isArray(vector)) {
    if (!vector.every((value) => typeof value === 'number')) throw notAVector();
    return { ...item, embedding: floatsToBase64(vector) };
  }
  if (format === 'float' && typeof vector === 'string') {
    const floats = base64ToFloats(vector);
    if (!floats) throw notAVector();
    return { ...item, embedding: floats };
  }
  if (typeof vector !== 'string' && !Array.isArray(vector)) throw notAVector();
  return item;
}

const notAVector = () => upstreamFailure.protocol('the upstream reply has an embedding that is neither floats nor their base64');

export function fromUpstreamEmbeddings(raw: unknown, request: EmbeddingRequest): EmbeddingResponse {
  const requestedModel = request.model;
  const body = asObject(raw, 'reply');
  rejectErrorBody(body);
  if (!Array.isArray(body.data)) throw upstreamFailure.protocol('the upstream reply has no data');
  const usage = (body.usage ?? {}) as { prompt_tokens?: unknown; total_tokens?: unknown };
  const prompt = int(usage.prompt_tokens);
  return {
    ...body,
    object: 'list',
    data: (body.data as Embedding[]).map((item) => inFormat(item, request.encoding_format ?? 'float')),
    model: requestedModel,
    usage: { prompt_tokens: prompt, total_tokens: usage.total_tokens != null ? int(usage.total_tokens) : prompt },
  };
}

/** `POST /v1/embeddings`: never streamed. */
export const embeddings: OperationMapping<EmbeddingRequest, EmbeddingResponse, never> = {
  toUpstream: (request, upstreamModel) => ({ ...request, model: upstreamModel }),
  fromReply: fromUpstreamEmbeddings,
  fromEvent: () => {
    throw upstreamFailure.protocol('embeddings are not streamed');
  },
  streamEnd: { name: 'the end' },
};
