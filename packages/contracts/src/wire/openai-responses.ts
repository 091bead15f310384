/**
 * OpenAI's Responses wire format (`POST /v1/responses`): one zod schema for the request, loose,
 * so fields the gateway does not read yet pass validation (and are dropped by the translation,
 * docs/api.md); the reply object, its output items and usage; the stream event; the worst case a
 * request is held by. OpenAI's own bounds only where a mistake would otherwise reach an upstream;
 * what reaches into the channel's shared account is refused (shared-account.ts).
 */
import { z } from 'zod';
import { modelField } from '../validation.ts';
import { checkSchedulingFields } from '../upstream-scheduling.ts';
import { OPENAI_ACCOUNT, refusedField, refuseOpenAIAccountReach } from './shared-account.ts';
import { AUDIO_CHARS_PER_TOKEN, CHAT_DEFAULT_MAX_TOKENS, estimateTokens, NON_TEXT_PART_ESTIMATE, NON_TEXT_PART_TOKENS, tokensAtMost, type PromptCount } from '../worst-case-usage.ts';

const inputPart = z.looseObject({ type: z.string() });

const messageItem = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer'], { error: "must be 'user', 'assistant', 'system' or 'developer'" }),
  content: z.union([z.string(), z.array(inputPart)], { error: 'must be a string or an array of content parts' }),
});

const functionCallItem = z.looseObject({
  type: z.literal('function_call'),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
  id: z.string().optional(),
});

const functionCallOutputItem = z.looseObject({
  type: z.literal('function_call_output'),
  call_id: z.string(),
  output: z.union([z.string(), z.array(inputPart)]),
});

const reasoningItem = z.looseObject({
  type: z.literal('reasoning'),
  id: z.string().optional(),
  summary: z.array(z.looseObject({ type: z.string(), text: z.string() })).optional(),
  encrypted_content: z.string().nullable().optional(),
});

/** A call of a custom (freeform) tool, as Codex's apply_patch: its input a string, not JSON. */
const customToolCallItem = z.looseObject({ type: z.literal('custom_tool_call'), call_id: z.string(), name: z.string(), input: z.string() });
const customToolCallOutputItem = z.looseObject({ type: z.literal('custom_tool_call_output'), call_id: z.string(), output: z.union([z.string(), z.array(inputPart)]) });

/** An output item of a stored response, named by its id (the gateway looks it up). */
const itemReference = z.looseObject({ type: z.literal('item_reference'), id: z.string() });

const inputItem = z.union([messageItem, functionCallItem, functionCallOutputItem, customToolCallItem, customToolCallOutputItem, reasoningItem, itemReference], {
  error: 'must be an input item: a message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning or item_reference',
});
export type ResponsesInputItem = z.infer<typeof inputItem>;

const functionTool = z.looseObject({
  type: z.literal('function'),
  name: z.string().min(1).max(128),
  description: z.string().nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  strict: z.boolean().nullable().optional(),
});

const toolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.looseObject({ type: z.literal('function'), name: z.string() }),
], { error: "must be 'auto', 'none', 'required' or {type: 'function', name}" });

const textFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    name: z.string().min(1).max(64),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().optional(),
    strict: z.boolean().nullable().optional(),
  }),
], { error: "must be {type: 'text'}, {type: 'json_object'} or {type: 'json_schema', name, schema}" });

export const responsesRequestSchema = z.looseObject({
  model: modelField,
  input: z.union([z.string(), z.array(inputItem)], { error: 'must be a string or an array of input items' }).optional(),
  instructions: z.string().nullable().optional(),
  tools: z.array(z.union([functionTool, z.looseObject({ type: z.string() })])).optional(),
  tool_choice: toolChoice.optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  text: z.looseObject({ format: textFormat.optional() }).nullable().optional(),
  // Effort names grow with OpenAI's models (none, minimal, low, medium, high, xhigh): any is taken, and read as the nearest the conversation model knows.
  reasoning: z.looseObject({ effort: z.string().max(32).nullable().optional(), summary: z.string().nullable().optional() }).nullable().optional(),
  max_output_tokens: z.number().int().min(16, 'must be at least 16').nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  metadata: z.record(z.string().max(64), z.string().max(512)).nullable().optional(),
  user: z.string().optional(),
  store: z.boolean().nullable().optional(),
  stream: z.boolean().nullable().optional(),
  background: z.boolean().nullable().optional(),
  previous_response_id: z.string().nullable().optional(),
  conversation: refusedField(`a conversation belongs to ${OPENAI_ACCOUNT}; continue with previous_response_id, which the gateway keeps per user`),
  prompt: refusedField(`a stored prompt belongs to ${OPENAI_ACCOUNT}; send its text as instructions`),
}).superRefine((body, context) => {
  // A premium tier, or a priority at the upstream, as on every OpenAI route.
  checkSchedulingFields(body, context);
  refuseOpenAIAccountReach(body, context);
});
export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/**
 * A Batch API line's body for `/v1/responses`: a request that stands alone, as nothing stores a
 * batch line's response or looks one up for it (no previous_response_id, no item_reference,
 * not in the background).
 */
export const responsesBatchLineSchema = responsesRequestSchema.superRefine((body, context) => {
  if (body.previous_response_id) context.addIssue({ code: 'custom', path: ['previous_response_id'], message: 'a batch line cannot continue a stored response: give the whole input' });
  if (body.background === true) context.addIssue({ code: 'custom', path: ['background'], message: 'a batch line runs in its batch, not in the background' });
  if (Array.isArray(body.input)) {
    body.input.forEach((item, at) => {
      if ((item as { type?: unknown }).type === 'item_reference') context.addIssue({ code: 'custom', path: ['input', at], message: 'a batch line cannot refer to a stored item: give the item itself' });
    });
  }
});

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** An output item: a message with output_text, a function_call, or reasoning. */
export type ResponsesOutputItem = { type: string; id: string; [field: string]: unknown };

export interface ResponsesResponse {
  id: string;
  object: 'response';
  created_at: number;
  status: 'completed' | 'incomplete' | 'failed' | 'in_progress' | 'queued' | 'cancelled';
  model: string;
  output: ResponsesOutputItem[];
  usage: ResponsesUsage | null;
  [field: string]: unknown;
}

/** One stream event, its `type` first (the door writes it as the SSE `event:` line), numbered by `sequence_number`. */
export type ResponsesStreamEvent = { type: string; sequence_number: number; [field: string]: unknown };

/** The content parts that are no text: an image, a file or a sound, inline or by URL or id. */
const NON_TEXT_PARTS = new Set(['input_image', 'input_file', 'input_audio']);

type MediaPart = { type: string; image_url?: unknown; file_data?: unknown; input_audio?: { data?: unknown } };

/**
 * A part that is no text, as chat's rule holds it (`worst-case-usage.ts`): an inline image at the
 * flat count, a sound's data at a token every AUDIO_CHARS_PER_TOKEN characters, an inline file (a
 * PDF) at a token a character, the rest of its JSON at a token a byte, and at least
 * NON_TEXT_PART_TOKENS, so that an image or file given by URL or id is held as one the upstream
 * will fetch and bill.
 */
function heldMediaPart(part: MediaPart): number {
  let media = 0;
  const rest: Record<string, unknown> = { ...part };
  if (typeof part.image_url === 'string' && /^data:image\//i.test(part.image_url)) rest.image_url = '';
  if (typeof part.file_data === 'string') {
    media += part.file_data.length;
    rest.file_data = '';
  }
  if (typeof part.input_audio?.data === 'string') {
    media += Math.ceil(part.input_audio.data.length / AUDIO_CHARS_PER_TOKEN);
    rest.input_audio = { ...part.input_audio, data: '' };
  }
  return Math.max(NON_TEXT_PART_TOKENS, media + tokensAtMost(JSON.stringify(rest)));
}

/**
 * The request's prompt (its input, instructions and tools), counted for its hold or as the
 * estimate a charge falls back on: text at a token a byte of its JSON (held) or by its text
 * (estimated), each image, file or sound part by `heldMediaPart` (held) or NON_TEXT_PART_ESTIMATE
 * (estimated), wherever it sits (a message's content, a function call's output).
 */
export function responsesRequestTokens(request: ResponsesRequest, count: PromptCount = 'estimate'): number {
  let media = 0;
  const text = JSON.stringify([request.instructions ?? '', request.input ?? '', request.tools ?? [], request.text ?? null], (_key, value: unknown) => {
    if (typeof value !== 'object' || value === null || !NON_TEXT_PARTS.has((value as { type?: unknown }).type as string)) return value;
    media += count === 'hold' ? heldMediaPart(value as MediaPart) : NON_TEXT_PART_ESTIMATE;
    return undefined;
  });
  return media + (count === 'hold' ? tokensAtMost(text) : estimateTokens(text));
}

/** The prompt and the most output (`max_output_tokens`, or chat's default where the client set none). */
export function responsesWorstCase(request: ResponsesRequest): number {
  return responsesRequestTokens(request, 'hold') + (request.max_output_tokens ?? CHAT_DEFAULT_MAX_TOKENS);
}
