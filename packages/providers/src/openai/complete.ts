/**
 * Text completions against an OpenAI-style upstream: the request mapped to the channel's model,
 * the reply (or each stream chunk) mapped back to the client's model name with a complete
 * `usage`, and every failure an `UpstreamError`.
 */
import { UpstreamError, type CompletionChunk, type CompletionRequest, type CompletionResponse, type CompletionUsage } from '@gateway/contracts';
import { readServerSentEvents } from '../server-sent-events.ts';
import { openUpstreamStream, postUpstreamJson } from '../upstream-request.ts';
import { openaiApi } from './api.ts';

/** Where and how to call: one channel, as the router chose it. */
export interface OpenAITarget {
  baseUrl: string;
  key: string;
  /** The model name the upstream knows (after the channel's model_mapping). */
  upstreamModel: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

type Usage = Partial<Omit<CompletionUsage, 'prompt_tokens_details' | 'completion_tokens_details'>> & {
  prompt_tokens_details?: Partial<CompletionUsage['prompt_tokens_details']> | null;
  completion_tokens_details?: Partial<CompletionUsage['completion_tokens_details']> | null;
};

const int = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? Math.max(0, Math.round(value)) : 0);

/** Every usage field SPEC.md lists, zero where the upstream gave none. */
export function normalizeUsage(usage: Usage | null | undefined): CompletionUsage {
  const prompt = int(usage?.prompt_tokens);
  const completion = int(usage?.completion_tokens);
  const p = usage?.prompt_tokens_details ?? {};
  const c = usage?.completion_tokens_details ?? {};
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: usage?.total_tokens != null ? int(usage.total_tokens) : prompt + completion,
    prompt_tokens_details: {
      cached_tokens: int(p.cached_tokens),
      text_tokens: int(p.text_tokens),
      audio_tokens: int(p.audio_tokens),
      image_tokens: int(p.image_tokens),
    },
    completion_tokens_details: {
      text_tokens: int(c.text_tokens),
      audio_tokens: int(c.audio_tokens),
      reasoning_tokens: int(c.reasoning_tokens),
    },
  };
}

/**
 * The body sent upstream: the client's body, unknown fields included, with the channel's model.
 * A stream always asks for usage, so it can be charged even when the client did not ask.
 */
export function toUpstreamRequest(request: CompletionRequest, upstreamModel: string): Record<string, unknown> {
  const body: Record<string, unknown> = { ...request, model: upstreamModel };
  if (request.stream === true) body.stream_options = { ...(request.stream_options ?? {}), include_usage: true };
  return body;
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UpstreamError({ kind: 'protocol', message: `the upstream ${what} is not a JSON object` });
  }
  return value as Record<string, unknown>;
}

/** A mid-stream or 200-status `{error}` body is a failure, not a reply. */
function rejectErrorBody(body: Record<string, unknown>): void {
  if (body.error && !body.choices) {
    const error = body.error as { message?: unknown; code?: unknown };
    const status = typeof error.code === 'number' && error.code >= 400 ? error.code : 502;
    throw new UpstreamError({
      kind: 'http',
      status,
      body,
      message: `upstream error: ${typeof error.message === 'string' ? error.message : 'unknown'}`,
    });
  }
}

/** The upstream's reply as the client sees it: its model name, `object`, and full usage. */
export function fromUpstreamCompletion(raw: unknown, requestedModel: string): CompletionResponse {
  const body = asObject(raw, 'reply');
  rejectErrorBody(body);
  if (!Array.isArray(body.choices)) throw new UpstreamError({ kind: 'protocol', message: 'the upstream reply has no choices' });
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

/** One completion, answered whole. */
export async function complete(target: OpenAITarget, request: CompletionRequest): Promise<CompletionResponse> {
  const raw = await postUpstreamJson({
    url: openaiApi.completionsUrl(target.baseUrl),
    headers: openaiApi.headers(target.key, false),
    body: toUpstreamRequest({ ...request, stream: false }, target.upstreamModel),
    timeoutMs: target.timeoutMs,
    signal: target.signal,
  });
  return fromUpstreamCompletion(raw, request.model);
}

/**
 * One completion as a stream of chunks. Resolves once the upstream accepted the request (a
 * refusal rejects here, before anything reached the client, so the router may fail over); the
 * chunks then come as the upstream sends them. `timeoutMs` bounds the wait for each next chunk.
 */
export async function streamCompletion(target: OpenAITarget, request: CompletionRequest): Promise<AsyncGenerator<CompletionChunk>> {
  const reply = await openUpstreamStream({
    url: openaiApi.completionsUrl(target.baseUrl),
    headers: openaiApi.headers(target.key, true),
    body: toUpstreamRequest({ ...request, stream: true }, target.upstreamModel),
    timeoutMs: target.timeoutMs,
    signal: target.signal,
  });
  async function* chunks(): AsyncGenerator<CompletionChunk> {
    let finished = false;
    try {
      for await (const data of readServerSentEvents(reply.body)) {
        if (data.trim() === '[DONE]') {
          finished = true;
          break;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch (error) {
          throw new UpstreamError({ kind: 'protocol', message: 'the upstream sent a stream event that is not JSON', cause: error });
        }
        yield fromUpstreamChunk(parsed, request.model);
      }
      if (!finished) throw new UpstreamError({ kind: 'connection', message: 'the upstream stream ended before [DONE]' });
    } catch (error) {
      throw reply.failure(error);
    } finally {
      if (!finished) reply.body.destroy();
      else reply.body.resume();
    }
  }
  return chunks();
}
