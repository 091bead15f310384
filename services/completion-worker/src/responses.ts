/**
 * OpenAI's Responses door on the completion worker: a response, whole or streamed, on a channel
 * of any type whose provider serves `responses` (through the conversation model), or passed
 * through untranslated to an `openai` channel whose upstream serves it (`responses_api`). Usage is
 * charged from the reply's `usage` (its `input_tokens` hold every prompt token, cached ones
 * included); where an upstream reported none, from the estimate of the request and the output
 * streamed so far, as for messages.ts.
 */
import {
  cacheWritesOf,
  clientCancelled,
  estimateTokens,
  responsesRequestTokens,
  textWeight,
  tokensOfWeight,
  type ResponsesRequest,
  type ResponsesResponse,
  type ResponsesStreamEvent,
  type ResponsesUsage,
  type StreamEnd,
} from '@gateway/contracts';
import { callUpstream, operationOn, streamUpstream } from '@gateway/providers';
import type { RouteTarget, Usage } from '@gateway/routing';
import type { ModelAnswer, Piece, WholeAnswer } from '@gateway/worker-runtime';

/**
 * Usage as the router records it, with the prompt cache's reads (`cached_tokens`) and writes (no
 * wire field: carried beside it by a translation, `cacheWritesOf`) where the provider reported them.
 */
function usageOf(usage: ResponsesUsage): Usage {
  const read = (usage.input_tokens_details as { cached_tokens?: unknown } | undefined)?.cached_tokens;
  const written = cacheWritesOf(usage);
  return {
    totalTokens: usage.input_tokens + usage.output_tokens, promptTokens: usage.input_tokens, completionTokens: usage.output_tokens,
    ...(typeof read === 'number' ? { cacheReadTokens: read } : {}),
    ...(written !== undefined ? { cacheWriteTokens: written } : {}),
  };
}

/** The text a reply's output produced, for the estimate when an upstream reports no usage. */
function outputText(output: ResponsesResponse['output']): string {
  return output.map((item) => JSON.stringify(item.content ?? item.arguments ?? item.summary ?? '')).join('');
}

export async function responseWhole(target: RouteTarget, request: ResponsesRequest): Promise<WholeAnswer<ResponsesResponse>> {
  const response = await callUpstream(operationOn('responses', target.channel), target, request);
  const usage = response.usage;
  if (usage && usage.input_tokens === 0 && usage.output_tokens === 0) {
    const input = responsesRequestTokens(request);
    const output = estimateTokens(outputText(response.output));
    response.usage = { ...usage, input_tokens: input, output_tokens: output, total_tokens: input + output };
  }
  return { whole: response, usage: usageOf(response.usage!) };
}

/** A stream opened on one channel: each Responses event as a piece, with the usage so far. */
export async function openResponseStream(target: RouteTarget, request: ResponsesRequest, signal: AbortSignal, begun: () => void): Promise<ModelAnswer<StreamEnd>> {
  const events = await streamUpstream(operationOn('responses', target.channel), target, request);
  begun();
  return { pieces: responsePieces(events, request, signal), end: () => ({ done: true }) };
}

async function* responsePieces(events: AsyncIterable<ResponsesStreamEvent>, request: ResponsesRequest, signal: AbortSignal): AsyncGenerator<Piece> {
  const estimatedPrompt = responsesRequestTokens(request);
  let streamedWeight = 0;
  for await (const event of events) {
    const final = (event.response as ResponsesResponse | undefined)?.usage;
    if (final && (event.type === 'response.completed' || event.type === 'response.incomplete')) {
      const usage = final.input_tokens + final.output_tokens > 0 ? usageOf(final) : undefined;
      if (signal.aborted) {
        yield { usage: usage ?? estimated(estimatedPrompt, streamedWeight), used: true };
        throw clientCancelled();
      }
      yield { data: JSON.stringify(event), usage: usage ?? estimated(estimatedPrompt, streamedWeight) };
      continue;
    }
    if (signal.aborted) continue;
    if (typeof event.delta === 'string') streamedWeight += textWeight(event.delta);
    yield { data: JSON.stringify(event), usage: estimated(estimatedPrompt, streamedWeight) };
  }
  if (signal.aborted) throw clientCancelled();
}

function estimated(promptTokens: number, streamedWeight: number): Usage {
  const completionTokens = tokensOfWeight(streamedWeight);
  return { totalTokens: promptTokens + completionTokens, promptTokens, completionTokens };
}
