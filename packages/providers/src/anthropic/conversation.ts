/**
 * The conversation model (see doors/door.ts) on an Anthropic upstream, as Messages: parts become
 * content blocks with their cache marks, thinking with its signature, tool uses and results;
 * the reply's blocks and Anthropic's stream events become the model's parts and events.
 *
 * By rule, as in chat.ts's table: `max_tokens` is 4096 where the door set none (Anthropic
 * requires one; the gateway holds the same); temperature is clamped to Anthropic's 0..1 and top_p
 * sent only without it; whitespace-only stop sequences are left out; a JSON response format is an
 * instruction appended to the system prompt; thinking (a budget, an effort, or adaptive) asks for
 * a budget that fits max_tokens (`claude-thinking.ts`), without a temperature, which Anthropic
 * refuses with thinking; thinking of an earlier turn without a signature (another provider's) is
 * left out, as Anthropic refuses it.
 */
import { CHAT_DEFAULT_MAX_TOKENS, upstreamFailure, type CacheMark, type ConversationEvent, type ConversationPart, type ConversationReply, type ConversationRequest, type ConversationUsage, type MediaSource, type StopReason } from '@gateway/contracts';
import type { ProviderConversation } from '../doors/door.ts';
import { errorInPlaceOfReply } from './error-body.ts';
import { isMessageStop } from './chat-stream.ts';
import { claudeThinking } from '../claude-thinking.ts';
import type { AnthropicUsage } from './wire.ts';

type Block = Record<string, unknown>;

const withCache = (block: Block, cache: CacheMark | undefined): Block => (cache ? { ...block, cache_control: cache } : block);

function sourceOf(source: MediaSource): Block {
  if (source.kind === 'url') return { type: 'url', url: source.url };
  return { type: source.kind, media_type: source.mediaType, data: source.data };
}

function blockOf(part: ConversationPart): Block | undefined {
  switch (part.type) {
    case 'text':
      return part.text === '' ? undefined : withCache({ type: 'text', text: part.text }, part.cache);
    case 'image':
      return withCache({ type: 'image', source: sourceOf(part.source) }, part.cache);
    case 'document':
      return withCache({ type: 'document', source: sourceOf(part.source), ...(part.title ? { title: part.title } : {}) }, part.cache);
    case 'tool_use':
      return withCache({ type: 'tool_use', id: part.id, name: part.name, input: part.input }, part.cache);
    case 'tool_result':
      return withCache({ type: 'tool_result', tool_use_id: part.toolUseId, content: part.content.map(blockOf).filter(Boolean), ...(part.isError ? { is_error: true } : {}) }, part.cache);
    case 'thinking':
      return part.signature ? { type: 'thinking', thinking: part.thinking, signature: part.signature } : undefined;
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: part.data };
  }
}

const isTurn = (message: ConversationRequest['messages'][number]) => (message.role as string) === 'user' || (message.role as string) === 'assistant';

function jsonInstruction(format: ConversationRequest['responseFormat']): Block | undefined {
  if (format?.type !== 'json') return undefined;
  if (!format.schema) return { type: 'text', text: 'Respond with one valid JSON object and nothing else: no prose, no code fences.' };
  return { type: 'text', text: `Respond with one valid JSON value and nothing else (no prose, no code fences) that matches this JSON Schema, named "${format.name ?? 'reply'}":\n${JSON.stringify(format.schema)}` };
}

function toMessages(request: ConversationRequest, upstreamModel: string, stream: boolean): Block {
  const maxTokens = request.maxOutputTokens ?? CHAT_DEFAULT_MAX_TOKENS;
  const turns = request.messages.filter(isTurn);
  const body: Block = {
    model: upstreamModel,
    max_tokens: maxTokens,
    messages: turns.map((message) => ({ role: message.role, content: message.parts.map(blockOf).filter(Boolean) })).filter((message) => message.content.length > 0),
    stream,
  };
  // An instruction mid-conversation (a door's system turn) joins the system prompt: Messages has no system turns.
  const instructions = [...request.system, ...request.messages.filter((message) => !isTurn(message)).flatMap((message) => message.parts)];
  const system = [...instructions.map(blockOf).filter((block): block is Block => block !== undefined), ...[jsonInstruction(request.responseFormat)].filter((block): block is Block => block !== undefined)];
  if (system.length > 0) body.system = system;
  const thinking = claudeThinking(request, maxTokens);
  if (thinking) body.thinking = thinking;
  else if (request.temperature !== undefined) body.temperature = Math.min(request.temperature, 1);
  else if (request.topP !== undefined) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  const stops = request.stopSequences?.filter((stop) => stop.trim() !== '') ?? [];
  if (stops.length > 0) body.stop_sequences = stops;
  if (request.user) body.metadata = { user_id: request.user };
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => withCache({ name: tool.name, ...(tool.description ? { description: tool.description } : {}), input_schema: tool.inputSchema }, tool.cache));
    const choice = request.toolChoice;
    if (choice) {
      const parallel = choice.parallel === false && choice.type !== 'none' ? { disable_parallel_tool_use: true } : {};
      body.tool_choice = choice.type === 'tool' ? { type: 'tool', name: choice.name, ...parallel } : { type: choice.type, ...parallel };
    }
  }
  return body;
}

function usageOf(usage: AnthropicUsage | undefined): ConversationUsage {
  return {
    inputTokens: usage?.input_tokens ?? 0,
    outputTokens: usage?.output_tokens ?? 0,
    ...(typeof usage?.cache_read_input_tokens === 'number' ? { cacheReadTokens: usage.cache_read_input_tokens } : {}),
    ...(typeof usage?.cache_creation_input_tokens === 'number' ? { cacheWriteTokens: usage.cache_creation_input_tokens } : {}),
  };
}

const STOP_REASONS = new Set(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'refusal', 'pause_turn']);
const stopReasonOf = (reason: unknown): StopReason => (STOP_REASONS.has(String(reason)) ? reason as StopReason : reason === 'model_context_window_exceeded' ? 'max_tokens' : 'end_turn');

function partOfReply(block: Block): ConversationPart | undefined {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(block.text ?? '') };
    case 'thinking':
      return { type: 'thinking', thinking: String(block.thinking ?? ''), ...(typeof block.signature === 'string' ? { signature: block.signature } : {}) };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: String(block.data ?? '') };
    case 'tool_use':
      return { type: 'tool_use', id: String(block.id), name: String(block.name), input: (block.input ?? {}) as Record<string, unknown> };
    default:
      return undefined;
  }
}

function fromMessage(raw: unknown): ConversationReply {
  if (typeof raw !== 'object' || raw === null) throw upstreamFailure.protocol('the upstream reply is not a JSON object');
  const body = raw as Block;
  if (body.type === 'error') throw errorInPlaceOfReply(body);
  if (!Array.isArray(body.content)) throw upstreamFailure.protocol('the upstream reply is not a message (no content)');
  const parts = (body.content as Block[]).map(partOfReply).filter((part): part is ConversationPart => part !== undefined);
  return { id: String(body.id ?? ''), parts, stopReason: stopReasonOf(body.stop_reason), stopSequence: (body.stop_sequence as string | null) ?? null, usage: usageOf(body.usage as AnthropicUsage) };
}

interface StreamState { usage?: AnthropicUsage; calls?: Map<number, number> }

function fromStreamEvent(raw: unknown, state: Record<string, unknown>): ConversationEvent[] {
  const event = raw as Block & { index?: number; delta?: Block; content_block?: Block; usage?: AnthropicUsage; message?: { id?: string; usage?: AnthropicUsage } };
  if (typeof event !== 'object' || event === null || typeof event.type !== 'string') throw upstreamFailure.protocol('the upstream sent a stream event without a type');
  const stream = state as StreamState;
  const calls = (stream.calls ??= new Map());
  switch (event.type) {
    case 'error':
      throw errorInPlaceOfReply(event);
    case 'message_start':
      stream.usage = event.message?.usage ?? {};
      return [{ type: 'start', id: String(event.message?.id ?? ''), usage: usageOf(stream.usage) }];
    case 'content_block_start': {
      const block = event.content_block ?? {};
      if (block.type === 'text' && block.text) return [{ type: 'text-delta', text: String(block.text) }];
      if (block.type !== 'tool_use') return [];
      calls.set(event.index ?? -1, calls.size);
      return [{ type: 'tool-call-start', call: calls.get(event.index ?? -1)!, id: String(block.id), name: String(block.name) }];
    }
    case 'content_block_delta': {
      const delta = event.delta ?? {};
      if (delta.type === 'text_delta') return [{ type: 'text-delta', text: String(delta.text ?? '') }];
      if (delta.type === 'thinking_delta') return [{ type: 'thinking-delta', thinking: String(delta.thinking ?? '') }];
      if (delta.type === 'signature_delta') return [{ type: 'signature', signature: String(delta.signature ?? '') }];
      const call = calls.get(event.index ?? -1);
      if (delta.type === 'input_json_delta' && call !== undefined) return [{ type: 'tool-args-delta', call, json: String(delta.partial_json ?? '') }];
      return [];
    }
    case 'message_delta': {
      // Its counts are cumulative and replace message_start's where it has them.
      const final = event.usage ?? {};
      const usage = { ...stream.usage, ...Object.fromEntries(Object.entries(final).filter(([, value]) => value != null)) };
      return [{ type: 'stop', stopReason: stopReasonOf(event.delta?.stop_reason), stopSequence: (event.delta?.stop_sequence as string | null) ?? null }, { type: 'usage', usage: usageOf(usage) }];
    }
    default:
      return [];
  }
}

export const messagesConversation: ProviderConversation = {
  toUpstream: toMessages,
  fromReply: fromMessage,
  fromEvent: fromStreamEvent,
  streamEnd: { name: 'message_stop', isMarker: isMessageStop },
};
