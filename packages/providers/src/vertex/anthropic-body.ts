/**
 * An Anthropic mapping as Vertex AI takes it: the same Messages body with no `model` (the path
 * names it) and `anthropic_version: "vertex-2023-10-16"` in the body, where Anthropic's own API
 * takes a header. Replies and stream events are Anthropic's, read by the same mapping.
 */
import type { OperationMapping } from '../provider.ts';
import { VERTEX_ANTHROPIC_VERSION } from './api.ts';

export function onVertex<Request, Reply, Event>(mapping: OperationMapping<Request, Reply, Event>): OperationMapping<Request, Reply, Event> {
  return {
    ...mapping,
    toUpstream(request, upstreamModel, stream) {
      const { model: _model, anthropic_version: _version, ...body } = mapping.toUpstream(request, upstreamModel, stream) as Record<string, unknown>;
      return { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body };
    },
  };
}
