/**
 * Anthropic's Messages wire format (`POST /v1/messages`, `POST /v1/messages/count_tokens`): one
 * zod schema for the request, loose, so fields the gateway does not know yet (`output_config`, a
 * new beta's) pass through to an `anthropic` channel as they came; the reply and stream event
 * shapes; the worst case a request is held by. Anthropic's own bounds only where a mistake would
 * otherwise reach an upstream (max_tokens, roles, block types); what reaches into the channel's
 * shared account is refused (shared-account.ts).
 */
import { z } from 'zod';
import { modelField } from '../validation.ts';
import { ANTHROPIC_ACCOUNT, refusedField, refuseAnthropicAccountReach } from './shared-account.ts';
import { estimateTokens, NON_TEXT_PART_ESTIMATE, NON_TEXT_PART_TOKENS, tokensAtMost, type PromptCount } from '../worst-case-usage.ts';

const cacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.string().optional() }).nullable().optional();

const textBlock = z.looseObject({ type: z.literal('text'), text: z.string(), cache_control: cacheControl });
const source = z.looseObject({ type: z.string() });

/** The block types the gateway reads; any other type passes as it is, for an anthropic channel to judge. */
const KNOWN_BLOCKS = ['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'];
const block = z.union([
  z.discriminatedUnion('type', [
    textBlock,
    z.looseObject({ type: z.literal('image'), source, cache_control: cacheControl }),
    z.looseObject({ type: z.literal('document'), source, cache_control: cacheControl }),
    z.looseObject({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.record(z.string(), z.unknown()), cache_control: cacheControl }),
    z.looseObject({
      type: z.literal('tool_result'),
      tool_use_id: z.string(),
      content: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]).optional(),
      is_error: z.boolean().optional(),
      cache_control: cacheControl,
    }),
    z.looseObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().optional() }),
    z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() }),
  ]),
  z.looseObject({ type: z.string().refine((t) => !KNOWN_BLOCKS.includes(t)) }),
], { error: 'must be a content block: text, image, document, tool_use, tool_result, thinking or redacted_thinking' });

export type MessagesBlock = z.infer<typeof block>;

/**
 * A turn. Its role is any name: 'user' and 'assistant', and 'system' mid-conversation (Claude
 * Code's mid-conversation-system beta), or one a later beta adds, for the upstream to judge; a
 * translation refuses what it cannot carry.
 */
const message = z.looseObject({
  role: z.string({ error: "must be 'user' or 'assistant'" }).min(1, "must be 'user' or 'assistant'"),
  content: z.union([z.string(), z.array(block)], { error: 'must be a string or an array of content blocks' }),
});

const tool = z.looseObject({
  name: z.string().min(1).max(128),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
  cache_control: cacheControl,
});

const toolChoice = z.looseObject({
  type: z.enum(['auto', 'any', 'tool', 'none']),
  name: z.string().optional(),
  disable_parallel_tool_use: z.boolean().optional(),
});

const system = z.union([z.string(), z.array(textBlock)], { error: 'must be a string or an array of text blocks' });

/** What count_tokens and a message share: the conversation, without the output settings. */
const conversationFields = {
  model: modelField,
  messages: z.array(message, { error: 'is required and must be an array of messages' }).min(1, 'must hold at least one message'),
  system: system.optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  thinking: z.looseObject({ type: z.string(), budget_tokens: z.number().int().min(0).optional() }).optional(),
  container: refusedField(`a container belongs to ${ANTHROPIC_ACCOUNT}`),
  mcp_servers: refusedField('a remote MCP server is called by Anthropic for the channel, at a cost the quota does not count; call it from the client as a tool'),
};

export const messagesRequestSchema = z.looseObject({
  ...conversationFields,
  max_tokens: z.number({ error: 'is required and must be an integer' }).int().min(1),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  metadata: z.looseObject({ user_id: z.string().nullable().optional() }).optional(),
}).superRefine(refuseAnthropicAccountReach);
export type MessagesRequest = z.infer<typeof messagesRequestSchema>;

export const countTokensRequestSchema = z.looseObject(conversationFields).superRefine(refuseAnthropicAccountReach);
export type CountTokensRequest = z.infer<typeof countTokensRequestSchema>;

/** The usage of a message, as Anthropic reports it: `input_tokens` is the prompt outside the cache. */
export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  [field: string]: unknown;
}

export interface MessagesResponse {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Record<string, unknown>[];
  stop_reason: string | null;
  stop_sequence: string | null;
  usage: MessagesUsage;
  [field: string]: unknown;
}

/** One stream event, its `type` first (the door writes it as the SSE `event:` line). */
export type MessagesStreamEvent = { type: string; [field: string]: unknown };

/** Every prompt token of a Messages usage, cached or not: what the request is charged as prompt. */
export const messagesPromptTokens = (usage: Partial<MessagesUsage>) =>
  (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);

/**
 * A Messages request's prompt: the whole body but its output settings, counted for its hold (a
 * token a byte of its JSON) or, by default, as the estimate a charge falls back on, with media
 * by chat's rules (`worst-case-usage.ts`): every image or document is NON_TEXT_PART_TOKENS held
 * (and NON_TEXT_PART_ESTIMATE estimated), whether its bytes are inline or behind a URL (which
 * the upstream fetches and bills as it would the bytes); an inline file that is no image (a PDF)
 * is held by its bytes, at least the flat count.
 */
export function messagesRequestTokens(request: CountTokensRequest, count: PromptCount = 'estimate'): number {
  const { max_tokens: _max, stream: _stream, stop_sequences: _stops, metadata: _metadata, ...prompt } = request as MessagesRequest;
  let media = 0;
  const text = JSON.stringify(prompt, function (this: unknown, key, value: unknown) {
    if (key !== 'source' || typeof value !== 'object' || value === null) return value;
    const blockType = (this as { type?: unknown } | null)?.type;
    if (blockType !== 'image' && blockType !== 'document') return value;
    const source = value as { type?: unknown; media_type?: unknown; data?: unknown };
    // A text document's source is its text, counted as a prompt's.
    if (source.type === 'text' || source.type === 'content') return value;
    const inline = source.type === 'base64' && typeof source.data === 'string' ? source.data : undefined;
    const image = blockType === 'image' || (typeof source.media_type === 'string' && source.media_type.startsWith('image/'));
    media += count === 'estimate' ? NON_TEXT_PART_ESTIMATE : inline === undefined || image ? NON_TEXT_PART_TOKENS : Math.max(NON_TEXT_PART_TOKENS, inline.length);
    return { type: source.type };
  });
  return media + (count === 'hold' ? tokensAtMost(text) : estimateTokens(text));
}

/** The prompt and the most output (`max_tokens`, which Anthropic requires and keeps to). */
export function messagesWorstCase(request: MessagesRequest): number {
  return messagesRequestTokens(request, 'hold') + request.max_tokens;
}
