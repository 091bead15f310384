/**
 * What a Gemini chat or embedding request holds on its quota while it runs, and what it is
 * charged when its upstream reports no usage: the same rules as a chat completion's
 * (worst-case-usage.ts), read off Gemini's parts. Text and every other byte of a part's JSON
 * at a token a byte for the hold; inline media by its kind (an image a flat count, audio a
 * token every AUDIO_CHARS_PER_TOKEN characters of its base64, any other file a token a
 * character); the output for each candidate, and the thinking budget beside it.
 */
import type { GeminiBatchEmbedRequest, GeminiChatRequest, GeminiPart } from './wire/gemini-content.ts';
import { geminiEmbedTexts } from './wire/gemini-content.ts';
import {
  AUDIO_CHARS_PER_TOKEN,
  CHAT_DEFAULT_MAX_TOKENS,
  estimateTokens,
  NON_TEXT_PART_ESTIMATE,
  NON_TEXT_PART_TOKENS,
  tokensAtMost,
} from './worst-case-usage.ts';
import type { PromptCount } from './worst-case-usage.ts';

function mediaTokens(part: GeminiPart): number {
  const { mimeType, data } = part.inlineData!;
  const rest = tokensAtMost(JSON.stringify({ ...part, inlineData: { mimeType, data: '' } }));
  if (/^image\//i.test(mimeType)) return Math.max(NON_TEXT_PART_TOKENS, rest);
  const media = /^audio\//i.test(mimeType) ? Math.ceil(data.length / AUDIO_CHARS_PER_TOKEN) : data.length;
  return Math.max(NON_TEXT_PART_TOKENS, media + rest);
}

function partTokens(part: GeminiPart, count: PromptCount): number {
  if (count === 'hold') return part.inlineData ? mediaTokens(part) : tokensAtMost(JSON.stringify(part));
  if (part.inlineData) return NON_TEXT_PART_ESTIMATE;
  const { text, thought: _thought, thoughtSignature: _signature, ...rest } = part;
  return estimateTokens(text ?? '') + (Object.keys(rest).length > 0 ? estimateTokens(JSON.stringify(rest)) : 0);
}

/** The prompt: every part of every content and of the system instruction, the tools and their config. */
export function geminiChatPromptTokens(request: GeminiChatRequest, count: PromptCount = 'estimate'): number {
  let prompt = 0;
  for (const content of request.contents) for (const part of content.parts) prompt += partTokens(part, count);
  for (const part of request.systemInstruction?.parts ?? []) prompt += partTokens(part, count);
  const { tools, toolConfig } = request;
  const schema = request.generationConfig?.responseSchema ?? request.generationConfig?.responseJsonSchema;
  if (tools || toolConfig || schema) {
    const around = JSON.stringify({ tools, toolConfig, schema });
    prompt += count === 'hold' ? tokensAtMost(around) : estimateTokens(around);
  }
  return Math.max(1, prompt);
}

/** The prompt, plus `maxOutputTokens` (CHAT_DEFAULT_MAX_TOKENS when unset) and any thinking budget for each candidate. */
export function geminiChatWorstCase(request: GeminiChatRequest): number {
  const config = request.generationConfig ?? {};
  const thinking = Math.max(0, config.thinkingConfig?.thinkingBudget ?? 0);
  const output = (config.maxOutputTokens ?? CHAT_DEFAULT_MAX_TOKENS) + thinking;
  return geminiChatPromptTokens(request, 'hold') + output * (config.candidateCount ?? 1);
}

/** Every text at a token a byte: embeddings have no output. */
export function geminiEmbedWorstCase(request: GeminiBatchEmbedRequest): number {
  return Math.max(1, geminiEmbedTexts(request).reduce((sum, text) => sum + tokensAtMost(text), 0));
}

/** The charge of an embedding whose upstream reports no usage. */
export function geminiEmbedPromptTokens(request: GeminiBatchEmbedRequest): number {
  return geminiEmbedTexts(request).reduce((sum, text) => sum + estimateTokens(text), 0);
}
