/**
 * The OpenAI chat completions wire format (`POST /v1/chat/completions`): one zod schema for the
 * request, with OpenAI's bounds (a 400 names the field), and the shapes of the response and of a
 * stream chunk. Fields the schema does not know pass through to the upstream unchanged.
 */
import { z } from 'zod';
import { modelField } from '../validation.ts';
import { checkOutputLengths } from '../output-length.ts';
import { checkSchedulingFields } from '../upstream-scheduling.ts';
import { completionStop } from './openai-completion.ts';

/** OpenAI accepts `null` for every optional field, and its SDK sends it. */
const optional = <S extends z.ZodType>(schema: S) => schema.nullable().optional();

/** OpenAI's own bounds. */
export const MAX_CHAT_TOOLS = 128;
export const MAX_METADATA_PAIRS = 16;

const text = z.looseObject({ type: z.literal('text'), text: z.string() });
const imageUrl = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({ url: z.string().min(1), detail: optional(z.enum(['auto', 'low', 'high'])) }),
});
const inputAudio = z.looseObject({
  type: z.literal('input_audio'),
  input_audio: z.looseObject({ data: z.string(), format: z.enum(['wav', 'mp3']) }),
});
const file = z.looseObject({
  type: z.literal('file'),
  file: z.looseObject({ file_data: optional(z.string()), file_id: optional(z.string()), filename: optional(z.string()) }),
});
const refusal = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });

/** A content part; a type this schema does not know yet passes as it is. */
const contentPart = z.union([
  z.discriminatedUnion('type', [text, imageUrl, inputAudio, file, refusal]),
  z.looseObject({ type: z.string().refine((t) => !['text', 'image_url', 'input_audio', 'file', 'refusal'].includes(t)) }),
], { error: 'must be a content part: text, image_url, input_audio or file' });

const content = z.union([z.string(), z.array(contentPart)], { error: 'must be a string or an array of content parts' });

const toolCall = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content, name: optional(z.string()) }),
  z.looseObject({ role: z.literal('developer'), content, name: optional(z.string()) }),
  z.looseObject({ role: z.literal('user'), content, name: optional(z.string()) }),
  z.looseObject({
    role: z.literal('assistant'),
    content: optional(content),
    name: optional(z.string()),
    refusal: optional(z.string()),
    tool_calls: optional(z.array(toolCall)),
    function_call: optional(z.looseObject({ name: z.string(), arguments: z.string() })),
  }),
  z.looseObject({ role: z.literal('tool'), content, tool_call_id: z.string({ error: 'is required for a tool message' }) }),
  z.looseObject({ role: z.literal('function'), content: z.string().nullable(), name: z.string() }),
], { error: 'must be a message with a role of system, developer, user, assistant, tool or function' });

export type ChatMessage = z.infer<typeof message>;

const functionDefinition = z.looseObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, underscores or dashes'),
  description: optional(z.string()),
  parameters: optional(z.record(z.string(), z.unknown())),
  strict: optional(z.boolean()),
});

const tool = z.looseObject({ type: z.literal('function'), function: functionDefinition });

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
  z.looseObject({ type: z.literal('allowed_tools') }),
  z.looseObject({ type: z.literal('custom') }),
], { error: 'must be "none", "auto", "required" or a named function' });

const responseFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, underscores or dashes'),
      description: optional(z.string()),
      schema: optional(z.record(z.string(), z.unknown())),
      strict: optional(z.boolean()),
    }),
  }),
], { error: 'must be {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "json_schema": {…}}' });

/** Counted before any entry is checked, as completions' `logit_bias` is. */
const logitBias = z
  .custom<object>((value) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return true;
    let entries = 0;
    for (const _ in value) if (++entries > 300) return false;
    return true;
  }, 'may hold at most 300 token ids')
  .pipe(z.record(z.string().regex(/^\d+$/, 'keys must be token ids'), z.number().min(-100).max(100)));

const metadata = z
  .record(z.string().max(64, 'keys must be at most 64 characters'), z.string().max(512, 'values must be at most 512 characters'))
  .refine((m) => Object.keys(m).length <= MAX_METADATA_PAIRS, `may hold at most ${MAX_METADATA_PAIRS} pairs`);

export const chatRequestSchema = z
  .looseObject({
    model: modelField,
    messages: z.array(message, { error: 'is required and must be an array of messages' }).min(1, 'must hold at least one message'),
    max_tokens: optional(z.number().int().min(1)),
    max_completion_tokens: optional(z.number().int().min(1)),
    temperature: optional(z.number().min(0).max(2)),
    top_p: optional(z.number().min(0).max(1)),
    n: optional(z.number().int().min(1).max(128)),
    presence_penalty: optional(z.number().min(-2).max(2)),
    frequency_penalty: optional(z.number().min(-2).max(2)),
    logit_bias: optional(logitBias),
    logprobs: optional(z.boolean()),
    top_logprobs: optional(z.number().int().min(0).max(20)),
    stop: optional(completionStop),
    seed: optional(z.number().int()),
    stream: optional(z.boolean()),
    stream_options: optional(z.looseObject({ include_usage: optional(z.boolean()), include_obfuscation: optional(z.boolean()) })),
    tools: optional(z.array(tool).max(MAX_CHAT_TOOLS, `may hold at most ${MAX_CHAT_TOOLS} tools`)),
    tool_choice: optional(toolChoice),
    parallel_tool_calls: optional(z.boolean()),
    functions: optional(z.array(functionDefinition).min(1).max(128, 'may hold at most 128 functions')),
    function_call: optional(z.union([z.enum(['none', 'auto']), z.looseObject({ name: z.string() })])),
    response_format: optional(responseFormat),
    reasoning_effort: optional(z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'])),
    modalities: optional(z.array(z.enum(['text', 'audio'])).min(1)),
    audio: optional(z.looseObject({ voice: z.union([z.string(), z.looseObject({ id: z.string() })]), format: z.enum(['wav', 'aac', 'mp3', 'flac', 'opus', 'pcm16']) })),
    prediction: optional(z.looseObject({ type: z.literal('content'), content })),
    store: optional(z.boolean()),
    metadata: optional(metadata),
    user: optional(z.string()),
  })
  .superRefine((body, ctx) => {
    checkOutputLengths(body, ctx);
    checkSchedulingFields(body, ctx);
    if (body.stream_options != null && body.stream !== true) {
      ctx.addIssue({ code: 'custom', path: ['stream_options'], message: 'is only allowed when stream is true' });
    }
    if (body.top_logprobs != null && body.logprobs !== true) {
      ctx.addIssue({ code: 'custom', path: ['top_logprobs'], message: 'requires logprobs to be true' });
    }
    if (body.parallel_tool_calls != null && body.tools == null) {
      ctx.addIssue({ code: 'custom', path: ['parallel_tool_calls'], message: 'is only allowed when tools are given' });
    }
    if (body.modalities?.includes('audio') && body.audio == null) {
      ctx.addIssue({ code: 'custom', path: ['audio'], message: 'is required when modalities include "audio"' });
    }
  });

export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** A tool call as a reply carries it, or as a stream chunk carries a piece of it (with its index). */
export interface ChatToolCall {
  index?: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface ChatResponseMessage {
  role: 'assistant';
  content: string | null;
  refusal?: string | null;
  tool_calls?: ChatToolCall[];
  [field: string]: unknown;
}

export interface ChatChoice {
  index: number;
  message: ChatResponseMessage;
  finish_reason: string | null;
  logprobs?: unknown;
  [field: string]: unknown;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [field: string]: unknown;
}

export interface ChatResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatChoice[];
  usage: ChatUsage;
  [field: string]: unknown;
}

export interface ChatChunkChoice {
  index: number;
  delta: { role?: 'assistant'; content?: string | null; refusal?: string | null; tool_calls?: ChatToolCall[]; [field: string]: unknown };
  finish_reason: string | null;
  logprobs?: unknown;
  [field: string]: unknown;
}

/** One `data:` event of a stream; the last one carries `usage` (and no choices) when asked for. */
export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChatChunkChoice[];
  usage?: ChatUsage | null;
  [field: string]: unknown;
}
