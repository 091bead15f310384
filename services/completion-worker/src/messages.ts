/**
 * Anthropic's Messages door on the completion worker: a message, whole or streamed, on a channel
 * of any type whose provider serves `messages` (passed through on an anthropic channel, through
 * the conversation model elsewhere), and count_tokens: the upstream's count where the channel's
 * provider has one for the model (`tokenCounterFor`: an anthropic channel, a vertex channel's
 * Claude models), else the estimate the charge falls back on. Usage is charged with every prompt token, cache reads and
 * writes included (`messagesPromptTokens`).
 */
import {
  clientCancelled,
  estimateTokens,
  messagesPromptTokens,
  messagesRequestTokens,
  textWeight,
  tokensOfWeight,
  type ClientHeaders,
  type CountTokensRequest,
  type MessagesRequest,
  type MessagesResponse,
  type MessagesStreamEvent,
  type MessagesUsage,
  type StreamEnd,
} from '@gateway/contracts';
import { callUpstream, operationFor, streamUpstream, tokenCounterFor } from '@gateway/providers';
import type { RouteTarget, Usage } from '@gateway/routing';
import type { ModelAnswer, Piece, WholeAnswer } from '@gateway/worker-runtime';

const withHeaders = (target: RouteTarget, clientHeaders: ClientHeaders | undefined) => (clientHeaders ? { ...target, clientHeaders } : target);

/** Usage as the router records it, with the prompt cache's reads and writes where the provider reported them. */
function usageOf(usage: Partial<MessagesUsage>): Usage {
  const promptTokens = messagesPromptTokens(usage);
  const completionTokens = usage.output_tokens ?? 0;
  const { cache_read_input_tokens: read, cache_creation_input_tokens: written } = usage;
  return {
    totalTokens: promptTokens + completionTokens, promptTokens, completionTokens,
    ...(typeof read === 'number' ? { cacheReadTokens: read } : {}),
    ...(typeof written === 'number' ? { cacheWriteTokens: written } : {}),
  };
}

/** The text a reply's blocks produced, for the estimate when an upstream reports no usage. */
function replyText(content: Record<string, unknown>[]): string {
  return content.map((block) => String(block.text ?? block.thinking ?? (block.input ? JSON.stringify(block.input) : ''))).join('');
}

export async function messageWhole(target: RouteTarget, request: MessagesRequest, clientHeaders?: ClientHeaders): Promise<WholeAnswer<MessagesResponse>> {
  const response = await callUpstream(operationFor('messages', target.channel.type), withHeaders(target, clientHeaders), request);
  if (messagesPromptTokens(response.usage) === 0 && !response.usage.output_tokens) {
    response.usage = { ...response.usage, input_tokens: messagesRequestTokens(request), output_tokens: estimateTokens(replyText(response.content)) };
  }
  return { whole: response, usage: usageOf(response.usage) };
}

/** A stream opened on one channel: each Anthropic event as a piece, with the usage so far. */
export async function openMessageStream(target: RouteTarget, request: MessagesRequest, clientHeaders: ClientHeaders | undefined, signal: AbortSignal, begun: () => void): Promise<ModelAnswer<StreamEnd>> {
  const events = await streamUpstream(operationFor('messages', target.channel.type), withHeaders(target, clientHeaders), request);
  begun();
  return { pieces: messagePieces(events, request, signal), end: () => ({ done: true }) };
}

type Delta = { text?: unknown; thinking?: unknown; partial_json?: unknown };

async function* messagePieces(events: AsyncIterable<MessagesStreamEvent>, request: MessagesRequest, signal: AbortSignal): AsyncGenerator<Piece> {
  const estimatedPrompt = messagesRequestTokens(request);
  let reported: Partial<MessagesUsage> = {};
  let final: Usage | undefined;
  let streamedWeight = 0;
  for await (const event of events) {
    if (event.type === 'message_start') reported = { ...reported, ...((event.message as { usage?: MessagesUsage } | undefined)?.usage ?? {}) };
    if (event.type === 'message_delta' && event.usage) {
      // message_delta's counts are cumulative, its input counts too when it has them. All zero,
      // the provider reported none (an OpenAI-compatible server without usage): the estimate stands.
      reported = { ...reported, ...(event.usage as Partial<MessagesUsage>) };
      const usage = usageOf(reported);
      final = usage.totalTokens > 0 ? usage : undefined;
      if (signal.aborted) {
        if (final) yield { usage: final, used: true };
        throw clientCancelled();
      }
    }
    if (signal.aborted) continue;
    if (event.type === 'content_block_delta') {
      const delta = event.delta as Delta;
      streamedWeight += textWeight(String(delta.text ?? delta.thinking ?? delta.partial_json ?? ''));
    }
    const completionTokens = tokensOfWeight(streamedWeight);
    const promptTokens = messagesPromptTokens(reported) || estimatedPrompt;
    // `type` first whatever the mapping gave: the door names the SSE event from the start of the JSON.
    const { type, ...rest } = event;
    yield { data: JSON.stringify({ type, ...rest }), usage: final ?? { totalTokens: promptTokens + completionTokens, promptTokens, completionTokens } };
  }
  if (signal.aborted) throw clientCancelled();
}

/** count_tokens: the upstream's own count where the channel's provider counts for the model; elsewhere, the estimate. Never charged. */
export async function countTokensWhole(target: RouteTarget, request: CountTokensRequest, clientHeaders?: ClientHeaders): Promise<WholeAnswer<{ input_tokens: number }>> {
  const none: Usage = { totalTokens: 0, promptTokens: 0, completionTokens: 0 };
  const counter = tokenCounterFor(target.channel.type, target.upstreamModel);
  if (!counter) return { whole: { input_tokens: messagesRequestTokens(request) }, usage: none };
  const counted = await callUpstream(counter, withHeaders(target, clientHeaders), request);
  return { whole: counted, usage: none };
}
