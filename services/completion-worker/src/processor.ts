import {
  chatPromptTokens,
  clientCancelled,
  estimateTokens,
  textWeight,
  tokensOfWeight,
  type ChatChunk,
  type ChatRequest,
  type ChatResponse,
  type CompletionChunk,
  type CompletionJobPayload,
  type CompletionRequest,
  type CompletionResponse,
  type EmbeddingRequest,
  type EmbeddingResponse,
  type GeminiGenerateResponse,
  type MessagesResponse,
  messagesRequestTokens,
  responsesRequestTokens,
  type ResponsesResponse,
  type StreamEnd,
} from '@gateway/contracts';
import { callUpstream, channelTypesFor, operationFor, streamUpstream } from '@gateway/providers';
import type { JobContext } from '@gateway/queue';
import { routeRecordIn, type ModelRequest, type ModelRouter, type RouteTarget, type Usage } from '@gateway/routing';
import { relayModelJob, type ModelAnswer, type Piece, type WholeAnswer } from '@gateway/worker-runtime';
import { chatReplyText, chunkText, embeddingPromptTokens, estimatedCompletionUsage, streamPromptTokens } from './openai-usage.ts';
import { usageGrace } from './usage-grace.ts';
import { embedOnChannel, generateWhole, geminiPromptTokens, isGeminiChat, openGeminiStream, type GeminiEmbedAnswer } from './gemini-jobs.ts';
import { countTokensWhole, messageWhole, openMessageStream } from './messages.ts';
import { openResponseStream, responseWhole } from './responses.ts';

export interface CompletionWorkerDeps {
  router: ModelRouter;
}

type Answer = CompletionResponse | ChatResponse | EmbeddingResponse | GeminiGenerateResponse | GeminiEmbedAnswer | MessagesResponse | ResponsesResponse | { input_tokens: number } | StreamEnd;

/**
 * Serves one job of the text operations: OpenAI's completions, chat and embeddings, Gemini's
 * generateContent and embeddings (`gemini-jobs.ts`), Anthropic's Messages and count_tokens
 * (`messages.ts`) and OpenAI's Responses (`responses.ts`), each request validated by the ingress. The router chooses the channel, of any type whose provider offers the
 * operation (the registry), and the relay (`relayModelJob`) runs the attempts; this module only
 * says how to call one channel, whole or streamed, and what it is charged.
 */
export function completionJobHandler(deps: CompletionWorkerDeps) {
  return async (context: JobContext<CompletionJobPayload>): Promise<Answer> => {
    // Validated by the ingress: the envelope is the contract, not checked a second time.
    const payload = context.payload;
    // A Gemini chat job queued as `generateContent` by a gateway of before is a `geminiChat`.
    const operation = payload.operation === 'generateContent' ? 'geminiChat' : payload.operation ?? 'completions';
    const routed: ModelRequest = {
      caller: payload.caller,
      // count_tokens goes to any channel that serves messages: one whose provider counts for the model asks it, another is estimated.
      types: channelTypesFor(operation === 'countTokens' ? 'messages' : operation),
      model: 'model' in payload ? payload.model : payload.request.model,
      operation,
      signal: context.signal,
      deadline: context.deadline,
      priority: context.priority,
      log: context.log,
      record: routeRecordIn(context.facts),
      idle: context.idle,
    };
    // A reply refused for its size is charged the prompt the upstream read (model-router.ts).
    const promptUsage = (): Usage => {
      const prompt = isGeminiChat(payload) || payload.operation === 'embedContent' ? geminiPromptTokens(payload)
        : payload.operation === 'embeddings' ? embeddingPromptTokens(payload.request)
        : payload.operation === 'messages' ? messagesRequestTokens(payload.request)
        : payload.operation === 'responses' ? responsesRequestTokens(payload.request)
        : payload.operation === 'countTokens' ? 0
        : streamPromptTokens(payload.request as CompletionRequest | ChatRequest);
      return { totalTokens: prompt, promptTokens: prompt, completionTokens: 0 };
    };
    const relay = (request: ModelRequest, call: (target: RouteTarget) => Promise<ModelAnswer<Answer>>) => relayModelJob<Answer>(deps.router, request, context, call, promptUsage);
    if (payload.operation === 'embeddings') return relay(routed, (target) => embedWhole(target, payload.request));
    if (payload.operation === 'embedContent') return relay(routed, (target) => embedOnChannel(target, payload));
    if (payload.operation === 'countTokens') return relay(routed, (target) => countTokensWhole(target, payload.request, payload.clientHeaders));
    if (isGeminiChat(payload) && payload.method === 'generateContent') return relay(routed, (target) => generateWhole(target, payload));
    if (isGeminiChat(payload) || payload.request.stream === true) {
      // A stream whose client leaves is charged by the upstream's usage if it comes soon after.
      const grace = usageGrace(context.signal);
      try {
        return await relay({ ...routed, signal: grace.signal }, (target) =>
          payload.operation === 'messages'
            ? openMessageStream(target, payload.request, payload.clientHeaders, context.signal, grace.begun)
            : payload.operation === 'responses'
              ? openResponseStream(target, payload.request, context.signal, grace.begun)
              : openStream(target, payload, context, grace.begun));
      } finally {
        grace.end();
      }
    }
    if (payload.operation === 'chat') return relay(routed, (target) => chatWhole(target, payload.request));
    if (payload.operation === 'messages') return relay(routed, (target) => messageWhole(target, payload.request, payload.clientHeaders));
    if (payload.operation === 'responses') return relay(routed, (target) => responseWhole(target, payload.request));
    return relay(routed, (target) => completeWhole(target, payload.request as CompletionRequest));
  };
}

async function completeWhole(target: RouteTarget, request: CompletionRequest): Promise<WholeAnswer<CompletionResponse>> {
  const response = await callUpstream(operationFor('completions', target.channel.type), target, request);
  if (response.usage.total_tokens === 0 && response.usage.prompt_tokens === 0) {
    // The upstream reported no usage: estimate it, for the client and for the charge.
    const { prompt, completion } = estimatedCompletionUsage(request, response);
    response.usage = { ...response.usage, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }
  return { whole: response, usage: openaiUsage(response.usage) };
}

async function chatWhole(target: RouteTarget, request: ChatRequest): Promise<WholeAnswer<ChatResponse>> {
  const response = await callUpstream(operationFor('chat', target.channel.type), target, request);
  if (response.usage.total_tokens === 0 && response.usage.prompt_tokens === 0) {
    const prompt = chatPromptTokens(request);
    const completion = estimateTokens(chatReplyText(response));
    response.usage = { ...response.usage, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }
  return { whole: response, usage: openaiUsage(response.usage) };
}

async function embedWhole(target: RouteTarget, request: EmbeddingRequest): Promise<WholeAnswer<EmbeddingResponse>> {
  const response = await callUpstream(operationFor('embeddings', target.channel.type), target, request);
  if (response.usage.total_tokens === 0) {
    const prompt = embeddingPromptTokens(request);
    response.usage = { prompt_tokens: prompt, total_tokens: prompt };
  }
  return { whole: response, usage: openaiUsage(response.usage) };
}

/** The upstream's chunks, of whichever streamed operation, as the client's format has them. */
async function upstreamChunks(target: RouteTarget, payload: CompletionJobPayload): Promise<AsyncGenerator<CompletionChunk | ChatChunk>> {
  if (payload.operation === 'chat') return streamUpstream(operationFor('chat', target.channel.type), target, payload.request);
  return streamUpstream(operationFor('completions', target.channel.type), target, payload.request as CompletionRequest);
}

/**
 * A stream opened on one channel: its chunks as the client's pieces, as they come. The usage
 * chunk reaches the client only when it asked for it (the upstream is always asked, so the
 * request can be charged); until it comes, the usage is estimated from what was sent.
 */
async function openStream(target: RouteTarget, payload: CompletionJobPayload, context: JobContext<CompletionJobPayload>, begun: () => void): Promise<ModelAnswer<StreamEnd>> {
  if (isGeminiChat(payload)) return openGeminiStream(target, payload, { signal: context.signal, begun });
  const chunks = await upstreamChunks(target, payload);
  begun();
  return { pieces: streamPieces(chunks, payload.request as CompletionRequest | ChatRequest, context.signal), end: () => ({ done: true }) };
}

async function* streamPieces(chunks: AsyncIterable<CompletionChunk | ChatChunk>, request: CompletionRequest | ChatRequest, signal: AbortSignal): AsyncGenerator<Piece> {
  const includeUsage = request.stream_options?.include_usage === true;
  const promptTokens = streamPromptTokens(request);
  let streamedWeight = 0;
  let reported: Usage | undefined;
  for await (const chunk of chunks) {
    if (chunk.usage) {
      reported = openaiUsage(chunk.usage);
      // The client is gone: this was all it was still read for. The upstream used it: charged.
      if (signal.aborted) {
        yield { usage: reported, used: true };
        throw clientCancelled();
      }
      if (!includeUsage) {
        if (chunk.choices.length === 0) {
          yield { usage: reported };
          continue;
        }
        delete chunk.usage;
      }
    } else if (includeUsage) {
      chunk.usage = null;
    }
    // The client is gone: read on (within the grace) for the usage only; the estimate counts
    // only what was sent.
    if (signal.aborted) continue;
    streamedWeight += textWeight(chunkText(chunk));
    const completionTokens = tokensOfWeight(streamedWeight);
    yield { data: JSON.stringify(chunk), usage: reported ?? { totalTokens: promptTokens + completionTokens, promptTokens, completionTokens } };
  }
  if (signal.aborted) throw clientCancelled();
}

/**
 * OpenAI's usage as the router records it: the charge is the total; the prompt cache's reads
 * (`cached_tokens`) and writes (`cache_write_tokens`, as the anthropic provider maps them) where
 * the upstream reported them.
 */
function openaiUsage(usage: { prompt_tokens: number; completion_tokens?: number; total_tokens: number; prompt_tokens_details?: unknown }): Usage {
  const details = (usage.prompt_tokens_details ?? {}) as { cached_tokens?: unknown; cache_write_tokens?: unknown };
  return {
    totalTokens: usage.total_tokens, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens ?? 0,
    ...(typeof details.cached_tokens === 'number' ? { cacheReadTokens: details.cached_tokens } : {}),
    ...(typeof details.cache_write_tokens === 'number' ? { cacheWriteTokens: details.cache_write_tokens } : {}),
  };
}
