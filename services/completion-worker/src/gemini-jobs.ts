/**
 * The completion queue's jobs that came through Gemini's own door: a chat model's
 * generateContent (operation `geminiChat`, whole or streamed), and embeddings. Each is the door's
 * request as it came, handed to the provider of the chosen channel (the registry): passed through
 * to a Gemini-style channel, or translated for another (doors/gemini-generate). Charged by the upstream's usage, or where it reports none
 * by the estimate's rule (`estimateTokens`), as the OpenAI operations are.
 */
import {
  geminiChatPromptTokens,
  geminiEmbedPromptTokens,
  textWeight,
  tokensOfWeight,
  type CompletionJobPayload,
  type GeminiGenerateResponse,
  type StreamEnd,
} from '@gateway/contracts';
import { callUpstream, operationFor } from '@gateway/providers';
import type { RouteTarget } from '@gateway/routing';
import { generateContentWhole, openGenerateContentStream, type GeminiCall, type GeminiOutputEstimate, type ModelAnswer, type StreamClient, type WholeAnswer } from '@gateway/worker-runtime';

type GenerateJob = Extract<CompletionJobPayload, { operation: 'geminiChat' | 'generateContent' }>;
type EmbedJob = Extract<CompletionJobPayload, { operation: 'embedContent' }>;

/** A chat model's job through Gemini's door (`generateContent`: queued by a gateway of before). */
export const isGeminiChat = (payload: CompletionJobPayload): payload is GenerateJob => payload.operation === 'geminiChat' || payload.operation === 'generateContent';

/** The text a reply (or stream event) carries: its parts' text, thoughts and function calls. */
function replyText(response: GeminiGenerateResponse): string {
  let text = '';
  for (const candidate of response.candidates ?? []) {
    for (const part of candidate.content?.parts ?? []) {
      text += part.text ?? '';
      const call = (part as { functionCall?: unknown }).functionCall;
      if (call) text += JSON.stringify(call);
    }
  }
  return text;
}

const textOutput: GeminiOutputEstimate = { weight: (response) => textWeight(replyText(response)), tokens: tokensOfWeight };

/** The prompt a Gemini job is charged when its upstream reports no usage. */
export function geminiPromptTokens(payload: GenerateJob | EmbedJob): number {
  return payload.operation === 'embedContent' ? geminiEmbedPromptTokens(payload.request) : geminiChatPromptTokens(payload.request);
}

/**
 * The door's request with the path's model in it, which a translated reply names as its
 * `modelVersion` (the passthrough leaves it out of the body it sends).
 */
const chatCall = (payload: GenerateJob): GeminiCall => ({ operation: 'geminiChat', request: { ...payload.request, model: payload.model } });

export function generateWhole(target: RouteTarget, payload: GenerateJob): Promise<WholeAnswer<GeminiGenerateResponse>> {
  return generateContentWhole(target, chatCall(payload), geminiPromptTokens(payload), textOutput);
}

/** `:streamGenerateContent`, read on after its client left for its usage, as a chat completion's stream is. */
export function openGeminiStream(target: RouteTarget, payload: GenerateJob, client: StreamClient): Promise<ModelAnswer<StreamEnd>> {
  return openGenerateContentStream(target, chatCall(payload), geminiPromptTokens(payload), textOutput, client);
}

/** Gemini's embedding reply: `{embedding}` for `:embedContent`, `{embeddings}` for a batch. */
export type GeminiEmbedAnswer = { embedding?: { values: number[] } } | { embeddings: { values: number[] }[] };

export async function embedOnChannel(target: RouteTarget, payload: EmbedJob): Promise<WholeAnswer<GeminiEmbedAnswer>> {
  const reply = await callUpstream(operationFor('embedContent', target.channel.type), target, payload.request);
  const prompt = reply.promptTokens ?? geminiEmbedPromptTokens(payload.request);
  const whole = payload.method === 'embedContent' ? { embedding: reply.embeddings[0] } : { embeddings: reply.embeddings };
  return { whole, usage: { totalTokens: prompt, promptTokens: prompt, completionTokens: 0 } };
}
