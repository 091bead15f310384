/**
 * Gemini's own embedding request on a Gemini-style upstream: passed through to
 * `:batchEmbedContents` as it came, each request naming the channel's model (Gemini refuses a
 * request whose model is not the path's). Gemini reports no usage: the worker estimates it.
 */
import { geminiBatchEmbedReply, upstreamFailure, type GeminiBatchEmbedRequest, type GeminiEmbedReply } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';

export const embedContent: OperationMapping<GeminiBatchEmbedRequest, GeminiEmbedReply, never> = {
  toUpstream: (request, upstreamModel) => {
    const model = `models/${upstreamModel.replace(/^models\//, '')}`;
    return { requests: request.requests.map((one) => ({ ...one, model })) };
  },
  fromReply: (raw) => {
    const parsed = geminiBatchEmbedReply.safeParse(raw);
    if (!parsed.success) throw upstreamFailure.protocol('the upstream reply has no embeddings with values');
    return { embeddings: parsed.data.embeddings };
  },
  fromEvent: () => {
    throw upstreamFailure.protocol('embeddings are not streamed');
  },
  streamEnd: { name: 'the end' },
};
