/**
 * An Anthropic mapping as Vertex AI takes it: the same Messages body with no `model` (the path
 * names it) and `anthropic_version: "vertex-2023-10-16"` in the body, where Anthropic's own API
 * takes a header. Replies and stream events are Anthropic's, read by the same mapping.
 * count_tokens is the exception: one endpoint for every Claude model, so the model is in the body.
 */
import type { CountTokensRequest } from '@gateway/contracts';
import { countTokens } from '../anthropic/messages.ts';
import type { OperationMapping } from '../provider.ts';
import { VERTEX_ANTHROPIC_VERSION, vertexModelId } from './api.ts';

export function onVertex<Request, Reply, Event>(mapping: OperationMapping<Request, Reply, Event>): OperationMapping<Request, Reply, Event> {
  return {
    ...mapping,
    toUpstream(request, upstreamModel, stream) {
      const { model: _model, anthropic_version: _version, ...body } = mapping.toUpstream(request, upstreamModel, stream) as Record<string, unknown>;
      return { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body };
    },
  };
}

/** Anthropic's count_tokens body with the model's Vertex id in it, and Vertex's version (as Anthropic's Vertex SDK sends it). */
export const countTokensOnVertex: OperationMapping<CountTokensRequest, { input_tokens: number }, never> = {
  ...countTokens,
  toUpstream(request, upstreamModel, stream) {
    const { anthropic_version: _version, ...body } = countTokens.toUpstream(request, vertexModelId(upstreamModel), stream) as Record<string, unknown>;
    return { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body };
  },
};
