/**
 * Text completions against an OpenAI-style upstream: the request mapped to the channel's model,
 * the reply (or each stream chunk) mapped back to the client's model name with the `usage` the
 * upstream reported, and every failure an `UpstreamError`.
 */
import { COMPLETION_DEFAULT_MAX_TOKENS, tokenCount, UpstreamError, upstreamFailure, type CompletionChunk, type CompletionRequest, type CompletionResponse, type CompletionUsage } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';

type Usage = Partial<Omit<CompletionUsage, 'prompt_tokens_details' | 'completion_tokens_details'>> & {
  prompt_tokens_details?: unknown;
  completion_tokens_details?: unknown;
};

const int = tokenCount;

/**
 * The usage as the upstream reported it: the three counts always (a total from the other two
 * when it sent none), and a details object, with each of its counts, only where the upstream
 * sent it. Zeros filled in for counts it never sent read as "no cache hit, no reasoning" when
 * the upstream simply did not say.
 */
export function normalizeUsage(usage: Usage | null | undefined): CompletionUsage {
  const prompt = int(usage?.prompt_tokens);
  const completion = int(usage?.completion_tokens);
  const normalized: CompletionUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: usage?.total_tokens != null ? int(usage.total_tokens) : prompt + completion,
  };
  const promptDetails = reportedCounts(usage?.prompt_tokens_details);
  if (promptDetails) normalized.prompt_tokens_details = promptDetails;
  const completionDetails = reportedCounts(usage?.completion_tokens_details);
  if (completionDetails) normalized.completion_tokens_details = completionDetails;
  return normalized;
}

/** The counts of a details object as reported (each a token count), or undefined when it is no object. */
function reportedCounts(details: unknown): Record<string, number> | undefined {
  if (typeof details !== 'object' || details === null || Array.isArray(details)) return undefined;
  const counts: Record<string, number> = {};
  for (const [field, value] of Object.entries(details)) if (typeof value === 'number') counts[field] = int(value);
  return counts;
}

/**
 * The body sent upstream: the client's body, unknown fields included, with the channel's model.
 * A stream always asks for usage, so it can be charged even when the client did not ask.
 */
export function openaiUpstreamRequest(request: { stream_options?: Record<string, unknown> | null }, upstreamModel: string, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { ...request, stream, model: upstreamModel };
  if (stream) body.stream_options = { ...(request.stream_options ?? {}), include_usage: true };
  return body;
}

export function asObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw upstreamFailure.protocol(`the upstream ${what} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** A mid-stream or 200-status `{error}` body is a failure, not a reply. */
export function rejectErrorBody(body: Record<string, unknown>): void {
  if (body.error && !body.choices) {
    const error = body.error as { message?: unknown; code?: unknown };
    const status = typeof error.code === 'number' && error.code >= 400 ? error.code : 502;
    throw upstreamFailure.http(status, `upstream error: ${typeof error.message === 'string' ? error.message : 'unknown'}`, { body });
  }
}

/** The upstream's reply as the client sees it: its model name, `object`, and full usage. */
export function fromUpstreamCompletion(raw: unknown, requestedModel: string): CompletionResponse {
  const body = asObject(raw, 'reply');
  rejectErrorBody(body);
  if (!Array.isArray(body.choices)) throw upstreamFailure.protocol('the upstream reply has no choices');
  return {
    ...body,
    id: typeof body.id === 'string' ? body.id : `cmpl-${Date.now().toString(36)}`,
    object: 'text_completion',
    created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
    model: requestedModel,
    choices: body.choices as CompletionResponse['choices'],
    usage: normalizeUsage(body.usage as Usage | undefined),
  };
}

/** A stream chunk as the client sees it; `usage` kept only on the chunk that carries it. */
export function fromUpstreamChunk(raw: unknown, requestedModel: string): CompletionChunk {
  const body = asObject(raw, 'stream chunk');
  rejectErrorBody(body);
  const chunk: CompletionChunk = {
    ...body,
    id: typeof body.id === 'string' ? body.id : '',
    object: 'text_completion',
    created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
    model: requestedModel,
    choices: Array.isArray(body.choices) ? (body.choices as CompletionChunk['choices']) : [],
  };
  if (body.usage) chunk.usage = normalizeUsage(body.usage as Usage);
  else delete chunk.usage;
  return chunk;
}

/** `POST /v1/completions`, whole or streamed: a stream ends with `data: [DONE]`. */
export const completions: OperationMapping<CompletionRequest, CompletionResponse, CompletionChunk> = {
  // The output limit the request is held by (OpenAI's default of 16) goes upstream too: llama.cpp,
  // vLLM and Ollama write on to the context without one, and 30 requests held at 18 tokens each
  // were charged 60 times their key's quota.
  toUpstream: (request, upstreamModel, stream) => ({ ...openaiUpstreamRequest(request, upstreamModel, stream), max_tokens: request.max_tokens ?? COMPLETION_DEFAULT_MAX_TOKENS }),
  fromReply: (raw, request) => fromUpstreamCompletion(raw, request.model),
  fromEvent: (raw, request) => fromUpstreamChunk(raw, request.model),
  streamEnd: { name: '[DONE]', isMarker: (data) => data.trim() === '[DONE]' },
};
