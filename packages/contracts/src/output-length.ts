/**
 * The output's length, by every name a server may read it under. The gateway passes fields it
 * does not know through, and servers read the length under names of their own: llama.cpp's
 * `n_predict` (before `max_tokens`), Ollama's `num_predict` (in `options` too), Hugging Face's
 * `max_new_tokens` (in `parameters` too) and `max_length`, the Responses API's
 * `max_output_tokens`, Gemini's `maxOutputTokens`, `maxTokens`, Llama's `max_gen_len`,
 * Anthropic's old `max_tokens_to_sample`, and `max_completion_tokens` sent to the legacy
 * completions. A request is held for the largest it
 * names (`n_predict: 3000` beside `max_tokens: 1` was held 1 token and charged 3,000), and one
 * that names no number of tokens (llama.cpp reads `n_predict: -1` as "no limit") is refused.
 */
import type { z } from 'zod';

export const OUTPUT_LENGTH_FIELDS = [
  'n_predict', 'num_predict', 'max_new_tokens', 'max_length', 'max_output_tokens', 'maxOutputTokens', 'maxTokens', 'max_gen_len',
  'max_tokens_to_sample', 'max_completion_tokens',
] as const;

/**
 * Every field the hold counts (the routes' own limits and counts of choices, and the other names
 * above). A server written in Go (Ollama, new-api as an upstream) matches JSON names in any case,
 * folded as Unicode folds them (`ſ` as `s`, the Kelvin sign as `k`), and takes the last: a body
 * with `max_tokens: 1` and `MAX_TOKENS: 100000` was held 1 and written 100,000. A name that is one
 * of these once folded, spelled otherwise, is refused.
 */
const COUNTED_FIELDS = ['max_tokens', 'n', 'best_of', ...OUTPUT_LENGTH_FIELDS];
const COUNTED_BY_FOLDED = new Map(COUNTED_FIELDS.map((field) => [foldedName(field), field]));
const OTHER_NAMES: ReadonlySet<string> = new Set(OUTPUT_LENGTH_FIELDS);

/** A name as a case-insensitive reader may take it. */
export function foldedName(name: string): string {
  return name.normalize('NFKC').toLowerCase();
}

/** Objects some servers read generation settings from, beside the body's own fields. */
const NESTED_IN = ['options', 'parameters'] as const;

type Found = { path: string[]; value: unknown };

/** The body's settings objects: itself, and those nested in it that are objects. */
function holders(body: Record<string, unknown>): { holder: Record<string, unknown>; prefix: string[] }[] {
  const found = [{ holder: body, prefix: [] as string[] }];
  for (const nest of NESTED_IN) {
    const holder = body[nest];
    if (holder !== null && typeof holder === 'object' && !Array.isArray(holder)) found.push({ holder: holder as Record<string, unknown>, prefix: [nest] });
  }
  return found;
}

function lengthFields(body: Record<string, unknown>): Found[] {
  const found: Found[] = [];
  for (const { holder, prefix } of holders(body)) {
    for (const field of OUTPUT_LENGTH_FIELDS) {
      const value = holder[field];
      if (value != null) found.push({ path: [...prefix, field], value });
    }
  }
  return found;
}

const isTokenCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * Every output length the body names under the other names (a chat's `max_completion_tokens`
 * too): only whole numbers, so a body the schema did not check (a batch line stored before it
 * did) never makes a hold of NaN.
 */
export function otherOutputLengths(body: Record<string, unknown>): number[] {
  return lengthFields(body).map(({ value }) => value).filter(isTokenCount);
}

/**
 * Refuses an output length that is no whole number of tokens (the hold could not count it), and
 * a name a case-insensitive server would read as one the hold counts.
 */
export function checkOutputLengths(body: Record<string, unknown>, ctx: z.RefinementCtx): void {
  for (const { holder, prefix } of holders(body)) {
    for (const [name, value] of Object.entries(holder)) {
      const counted = COUNTED_BY_FOLDED.get(foldedName(name));
      if (counted === undefined) continue;
      if (counted !== name) {
        ctx.addIssue({ code: 'custom', path: [...prefix, name], message: `is refused: a server that reads names in any case would take it for ${counted}, which the gateway holds quota by as spelled; send ${counted}` });
      } else if (OTHER_NAMES.has(name) && value != null && !isTokenCount(value)) {
        ctx.addIssue({ code: 'custom', path: [...prefix, name], message: 'must be a whole number of tokens, 0 or more: the gateway holds quota for the longest output a request may ask for, by any name' });
      }
    }
  }
}
