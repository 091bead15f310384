/**
 * The OpenAI legacy completions wire format (`POST /v1/completions`): one zod schema for the
 * request, validated by the ingress and again by the completion worker, and the shapes of the
 * response and of a stream chunk. Fields the schema does not know pass through to the upstream.
 */
import { z } from 'zod';
import { checkOutputLengths } from '../output-length.ts';
import { checkSchedulingFields } from '../upstream-scheduling.ts';
import { modelField } from '../validation.ts';

const isTokenId = (value: unknown) => Number.isInteger(value) && (value as number) >= 0;
const isTokenIds = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every(isTokenId);

/**
 * A string, an array of strings, an array of token ids, or an array of token-id arrays. Token
 * ids are checked in one plain loop that stops at the first bad one: zod checks every element
 * of an array and records an issue for each, seconds of a blocked event loop for a
 * million-token prompt (and for each branch of the union it fails).
 */
export const completionPrompt = z.union([
  z.string(),
  z.custom<number[]>(isTokenIds),
  z.custom<number[][]>((value) => Array.isArray(value) && value.length > 0 && value.every(isTokenIds)),
  z.array(z.string()).min(1, 'must not be an empty array'),
], { error: 'must be a string, an array of strings, an array of token ids, or an array of token-id arrays' });

/** OpenAI's own bound on `logit_bias`. */
export const MAX_LOGIT_BIAS_ENTRIES = 300;

/** Counted before any entry is checked, so a 6 MB map is refused in a moment, not after a walk. */
const logitBias = z
  .custom<object>((value) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return true;
    let entries = 0;
    for (const _ in value) if (++entries > MAX_LOGIT_BIAS_ENTRIES) return false;
    return true;
  }, `may hold at most ${MAX_LOGIT_BIAS_ENTRIES} token ids`)
  .pipe(z.record(z.string().regex(/^\d+$/, 'keys must be token ids'), z.number().min(-100).max(100)));

export const completionStop = z.union([
  z.string(),
  z.array(z.string()).min(1, 'must hold 1 to 4 strings').max(4, 'must hold 1 to 4 strings'),
], { error: 'must be a string or an array of 1 to 4 strings' });

/** OpenAI accepts `null` for every optional field, and its SDK sends it. */
const optional = <S extends z.ZodType>(schema: S) => schema.nullable().optional();

export const completionRequestSchema = z
  .looseObject({
    model: modelField,
    prompt: completionPrompt,
    max_tokens: optional(z.number().int().min(0)),
    temperature: optional(z.number().min(0).max(2)),
    top_p: optional(z.number().min(0).max(1)),
    n: optional(z.number().int().min(1).max(128)),
    best_of: optional(z.number().int().min(1).max(128)),
    logprobs: optional(z.number().int().min(0).max(5)),
    presence_penalty: optional(z.number().min(-2).max(2)),
    frequency_penalty: optional(z.number().min(-2).max(2)),
    logit_bias: optional(logitBias),
    stop: optional(completionStop),
    suffix: optional(z.string()),
    echo: optional(z.boolean()),
    stream: optional(z.boolean()),
    stream_options: optional(z.looseObject({ include_usage: optional(z.boolean()) })),
    user: optional(z.string()),
    seed: optional(z.number().int()),
  })
  .superRefine((body, ctx) => {
    checkOutputLengths(body, ctx);
    checkSchedulingFields(body, ctx);
    if (body.best_of != null) {
      if (body.best_of < (body.n ?? 1)) {
        ctx.addIssue({ code: 'custom', path: ['best_of'], message: 'must be greater than or equal to n' });
      }
      if (body.stream === true && body.best_of > 1) {
        ctx.addIssue({ code: 'custom', path: ['best_of'], message: 'cannot be used with stream' });
      }
    }
    if (body.stream_options != null && body.stream !== true) {
      ctx.addIssue({ code: 'custom', path: ['stream_options'], message: 'is only allowed when stream is true' });
    }
  });

export type CompletionRequest = z.infer<typeof completionRequestSchema>;

/** Usage as OpenAI sends it; a details object, and each of its counts, only where the upstream reported it. */
export const completionUsageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  prompt_tokens_details: z.looseObject({
    cached_tokens: z.number().int().optional(),
    text_tokens: z.number().int().optional(),
    audio_tokens: z.number().int().optional(),
    image_tokens: z.number().int().optional(),
  }).optional(),
  completion_tokens_details: z.looseObject({
    text_tokens: z.number().int().optional(),
    audio_tokens: z.number().int().optional(),
    reasoning_tokens: z.number().int().optional(),
  }).optional(),
});

export type CompletionUsage = z.infer<typeof completionUsageSchema>;

export const completionChoiceSchema = z.looseObject({
  text: z.string(),
  index: z.number().int(),
  logprobs: z.unknown().nullable().optional(),
  finish_reason: z.string().nullable(),
});

export const completionResponseSchema = z.looseObject({
  id: z.string(),
  object: z.literal('text_completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(completionChoiceSchema),
  usage: completionUsageSchema,
});

export type CompletionResponse = z.infer<typeof completionResponseSchema>;

/** One `data:` event of a stream; the last one carries `usage` (and no choices) when asked for. */
export const completionChunkSchema = z.looseObject({
  id: z.string(),
  object: z.literal('text_completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(completionChoiceSchema),
  usage: completionUsageSchema.nullable().optional(),
});

export type CompletionChunk = z.infer<typeof completionChunkSchema>;
