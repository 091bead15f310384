/**
 * The mock Gemini upstream's embeddings: `:batchEmbedContents` answers `{embeddings: [{values}]}`,
 * one vector a request (8 floats unless `outputDimensionality`), the same for the same text, and
 * `:embedContent` `{embedding: {values}}` for its one content. Checked as Gemini checks them:
 * every request names the model of the path (`models/{model}`) and has text parts.
 */
import { createHash } from 'node:crypto';

/** The answer's body, or the message of Gemini's 400 INVALID_ARGUMENT. */
export type EmbeddingAnswer = { body: Record<string, unknown> } | { refused: string };

interface EmbedRequest {
  model?: unknown;
  content?: { parts?: { text?: unknown }[] };
  outputDimensionality?: unknown;
}

/** `:batchEmbedContents` for `model`, or `:embedContent` when `single` (its body one request without a model). */
export function embed(model: string, body: Record<string, unknown>, single: boolean): EmbeddingAnswer {
  const requests = single ? [{ model: `models/${model}`, ...body }] : body.requests;
  if (!Array.isArray(requests) || requests.length === 0) return { refused: '* BatchEmbedContentsRequest.requests: must not be empty' };
  const embeddings = [];
  for (const [i, request] of (requests as EmbedRequest[]).entries()) {
    if (request?.model !== `models/${model}`) {
      return { refused: `* BatchEmbedContentsRequest.requests[${i}].model: the model must match the parent model models/${model}` };
    }
    const parts = request.content?.parts;
    if (!Array.isArray(parts) || parts.length === 0 || parts.some((p) => typeof p?.text !== 'string')) {
      return { refused: `* BatchEmbedContentsRequest.requests[${i}].content: must have text parts` };
    }
    const dimensions = typeof request.outputDimensionality === 'number' ? request.outputDimensionality : 8;
    const digest = createHash('sha256').update(parts.map((p) => p.text).join('')).digest();
    embeddings.push({ values: Array.from({ length: dimensions }, (_, d) => (digest[d % digest.length]! - 127.5) / 127.5) });
  }
  return { body: single ? { embedding: embeddings[0] } : { embeddings } };
}
