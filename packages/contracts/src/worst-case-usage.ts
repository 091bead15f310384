/**
 * The most quota a request may use, decided from its body before it is enqueued: what it holds
 * on its key's and user's quota while in flight (see @gateway/store's QuotaHolds). Prompts are
 * counted at about four characters a token, the rule of thumb the workers also charge by when an
 * upstream reports no usage.
 */
import type { GeminiGenerateRequest } from './wire/gemini-generate.ts';
import { geminiRequestText } from './wire/gemini-generate.ts';
import type { CompletionRequest } from './wire/openai-completion.ts';

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function estimatePromptTokens(prompt: unknown): number {
  if (typeof prompt === 'string') return estimateTokens(prompt);
  if (!Array.isArray(prompt)) return 0;
  let total = 0;
  for (const item of prompt) {
    if (typeof item === 'number') total += 1;
    else if (typeof item === 'string') total += estimateTokens(item);
    else if (Array.isArray(item)) total += item.length;
  }
  return total;
}

/** OpenAI's default `max_tokens` for legacy completions. */
export const COMPLETION_DEFAULT_MAX_TOKENS = 16;

/** The prompt, plus `max_tokens` (16 when unset) for each of the `best_of` or `n` completions made. */
export function completionWorstCase(request: CompletionRequest): number {
  const completions = Math.max(request.n ?? 1, request.best_of ?? 1);
  return estimatePromptTokens(request.prompt) + (request.max_tokens ?? COMPLETION_DEFAULT_MAX_TOKENS) * completions;
}

/**
 * The most a Gemini speech model produces: 16,384 output tokens (655 s of audio at 25 tokens a
 * second), unless `maxOutputTokens` says less.
 */
export const SPEECH_MAX_OUTPUT_TOKENS = 16_384;

export function speechWorstCase(request: GeminiGenerateRequest): number {
  const output = Math.min(request.generationConfig.maxOutputTokens ?? SPEECH_MAX_OUTPUT_TOKENS, SPEECH_MAX_OUTPUT_TOKENS);
  return Math.max(1, estimateTokens(geminiRequestText(request))) + output;
}
