/**
 * Gemini's generateContent on one chosen channel, whole or streamed: the audio worker's speech
 * and the completion worker's chat alike. The reply (each stream event) goes to the client as
 * the upstream sent it and is charged by its usageMetadata; where the upstream reports none, or
 * a stream is cut short before its last event, by an estimate: the prompt's tokens, and the
 * output's as the worker reads it from what came (seconds of audio, or text).
 */
import { cacheWritesOf, clientCancelled, type GeminiChatRequest, type GeminiContentRequest, type GeminiGenerateResponse, type GeminiUsageMetadata, type StreamEnd } from '@gateway/contracts';
import { callUpstream, operationFor, streamUpstream } from '@gateway/providers';
import type { RouteTarget, Usage } from '@gateway/routing';
import type { ModelAnswer, Piece, WholeAnswer } from './model-relay.ts';

/** How a worker estimates the output of a reply it got no usage for. */
export interface GeminiOutputEstimate {
  /** What one reply (or event) holds, in a unit that adds up across events (ms of audio, text weight). */
  weight(response: GeminiGenerateResponse): number;
  /** The tokens of that much output. */
  tokens(weight: number): number;
}

/**
 * The operation a request is served by: speech's `generateContent` (gemini channels alone), or a
 * chat model's `geminiChat` (any channel type with the door's mapping).
 */
export type GeminiCall = { operation: 'generateContent'; request: GeminiContentRequest } | { operation: 'geminiChat'; request: GeminiChatRequest };

const operationOf = (call: GeminiCall, target: RouteTarget) =>
  call.operation === 'geminiChat' ? operationFor('geminiChat', target.channel.type) : operationFor('generateContent', target.channel.type);

export async function generateContentWhole(target: RouteTarget, call: GeminiCall, promptTokens: number, output: GeminiOutputEstimate): Promise<WholeAnswer<GeminiGenerateResponse>> {
  const response = await callUpstream(operationOf(call, target) as ReturnType<typeof operationFor<'generateContent'>>, target, call.request);
  // The upstream reported no usage: estimate it, for the client and for the charge.
  response.usageMetadata ??= estimatedUsage(promptTokens, output.tokens(output.weight(response)));
  return { whole: response, usage: geminiUsage(response.usageMetadata) };
}

/**
 * A stream read on after its client left, for its usage (the completion worker's usage grace,
 * as for chat completions): the client's own signal, and a call once the stream has begun.
 */
export interface StreamClient {
  signal: AbortSignal;
  begun(): void;
}

/**
 * A stream opened on one channel: the upstream's events (each a whole GenerateContentResponse)
 * as the client's pieces, as they come. Gemini puts the whole usageMetadata on the last event;
 * until it arrives the usage is an estimate of what was streamed, so a stream cut short is still
 * charged. With a `client`, a stream whose client left is read on for that last event's usage
 * alone, which is then charged.
 */
export async function openGenerateContentStream(target: RouteTarget, call: GeminiCall, promptTokens: number, output: GeminiOutputEstimate, client?: StreamClient): Promise<ModelAnswer<StreamEnd>> {
  const events = await streamUpstream(operationOf(call, target) as ReturnType<typeof operationFor<'generateContent'>>, target, call.request);
  client?.begun();
  return { pieces: eventPieces(events, promptTokens, output, client?.signal), end: () => ({ done: true }) };
}

const isLast = (event: GeminiGenerateResponse) => event.candidates?.some((candidate) => candidate.finishReason) === true;

async function* eventPieces(events: AsyncIterable<GeminiGenerateResponse>, promptTokens: number, output: GeminiOutputEstimate, client?: AbortSignal): AsyncGenerator<Piece> {
  let weight = 0;
  let reported: Usage | undefined;
  for await (const event of events) {
    if (event.usageMetadata) reported = geminiUsage(event.usageMetadata);
    if (client?.aborted) {
      // Nobody reads the text any more; the upstream's count of what it made is still charged.
      if (!isLast(event) || !reported) continue;
      yield { usage: reported, used: true };
      throw clientCancelled();
    }
    weight += output.weight(event);
    yield { data: JSON.stringify(event), usage: reported ?? geminiUsage(estimatedUsage(promptTokens, output.tokens(weight))) };
  }
  if (client?.aborted) throw clientCancelled();
}

function estimatedUsage(promptTokenCount: number, candidatesTokenCount: number): GeminiUsageMetadata {
  return { promptTokenCount, candidatesTokenCount, totalTokenCount: promptTokenCount + candidatesTokenCount };
}

/** Gemini's usage as the router records it: the charge is the total; the output counts thoughts too. */
export function geminiUsage(usage: { promptTokenCount?: number; candidatesTokenCount?: number; thoughtsTokenCount?: number; cachedContentTokenCount?: number; totalTokenCount: number }): Usage {
  const read = usage.cachedContentTokenCount;
  // Cache writes have no field in Gemini's usage: a translation carries them beside it.
  const written = cacheWritesOf(usage);
  return {
    totalTokens: usage.totalTokenCount, promptTokens: usage.promptTokenCount, completionTokens: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
    ...(typeof read === 'number' ? { cacheReadTokens: read } : {}),
    ...(written !== undefined ? { cacheWriteTokens: written } : {}),
  };
}

/** A charge of the prompt alone (a reply refused for its size: the upstream read the prompt). */
export const promptUsage = (tokens: number): Usage => ({ totalTokens: tokens, promptTokens: tokens, completionTokens: 0 });
