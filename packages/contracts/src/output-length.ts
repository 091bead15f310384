/**
 * The output's length, by every name a server may read it under. The gateway passes fields it
 * does not know through, and servers read the length under names of their own: llama.cpp's
 * `n_predict` (before `max_tokens`), Ollama's `num_predict` (in `options` too), Hugging Face's
 * `max_new_tokens` (in `parameters` too) and `max_length`, the Responses API's
 * `max_output_tokens`, Gemini's `maxOutputTokens`, Anthropic's old `max_tokens_to_sample`, and
 * `max_completion_tokens` sent to the legacy completions. A request is held for the largest it
 * names (`n_predict: 3000` beside `max_tokens: 1` was held 1 token and charged 3,000), and one
 * that names no number of tokens (llama.cpp reads `n_predict: -1` as "no limit") is refused.
 */
import type { z } from 'zod';

export const OUTPUT_LENGTH_FIELDS = [
  'n_predict', 'num_predict', 'max_new_tokens', 'max_length', 'max_output_tokens', 'maxOutputTokens', 'max_tokens_to_sample', 'max_completion_tokens',
] as const;

/** Objects some servers read generation settings from, beside the body's own fields. */
const NESTED_IN = ['options', 'parameters'] as const;

type Found = { path: (string | number)[]; value: unknown };

function lengthFields(body: Record<string, unknown>): Found[] {
  const found: Found[] = [];
  const look = (holder: unknown, prefix: string[]) => {
    if (holder === null || typeof holder !== 'object' || Array.isArray(holder)) return;
    for (const field of OUTPUT_LENGTH_FIELDS) {
      const value = (holder as Record<string, unknown>)[field];
      if (value != null) found.push({ path: [...prefix, field], value });
    }
  };
  look(body, []);
  for (const nest of NESTED_IN) look(body[nest], [nest]);
  return found;
}

/** Every output length the body names under another name than its route's own limit. */
export function otherOutputLengths(body: Record<string, unknown>): number[] {
  return lengthFields(body).map(({ value }) => value as number);
}

/** Refuses an output length that is no whole number of tokens (the hold could not count it). */
export function checkOutputLengths(body: Record<string, unknown>, ctx: z.RefinementCtx): void {
  for (const { path, value } of lengthFields(body)) {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      ctx.addIssue({ code: 'custom', path, message: 'must be a whole number of tokens, 0 or more: the gateway holds quota for the longest output a request may ask for, by any name' });
    }
  }
}
