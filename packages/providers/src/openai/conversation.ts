/**
 * The conversation model (see doors/door.ts) on an OpenAI-compatible upstream, as chat
 * completions: system parts become a system message, tool uses `tool_calls` and tool results
 * `tool` messages, images `image_url` parts; the reply's `reasoning_content` becomes a thinking
 * part and `prompt_tokens_details.cached_tokens` the cache reads.
 *
 * What chat completions cannot carry is dropped by this rule, never sent to fail: cache marks
 * (an OpenAI upstream caches by itself), thinking and redacted-thinking parts of earlier turns
 * (their signatures are another provider's), `top_k`, and documents other than text (refused
 * with a 400 naming the part, as nothing would read them).
 */
import { badRequest, upstreamFailure, type ConversationEvent, type ConversationPart, type ConversationReply, type ConversationRequest, type ConversationUsage, type StopReason } from '@gateway/contracts';
import type { ProviderConversation } from '../doors/door.ts';
import { asObject, rejectErrorBody } from './complete.ts';

type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

function imageUrl(part: Extract<ConversationPart, { type: 'image' }>): ChatPart {
  const { source } = part;
  return { type: 'image_url', image_url: { url: source.kind === 'url' ? source.url : `data:${source.mediaType};base64,${source.data}` } };
}

function userParts(parts: ConversationPart[], at: number): ChatPart[] {
  const out: ChatPart[] = [];
  parts.forEach((part, index) => {
    if (part.type === 'text') out.push({ type: 'text', text: part.text });
    else if (part.type === 'image') out.push(imageUrl(part));
    else if (part.type === 'document' && part.source.kind === 'text') out.push({ type: 'text', text: part.source.data });
    else if (part.type === 'document') throw badRequest(`messages[${at}].content[${index}]: a document other than text can only go to an anthropic channel`, `messages[${at}].content[${index}]`);
  });
  return out;
}

const textOf = (parts: { type: string; text?: string }[]) => parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

function chatMessages(request: ConversationRequest): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [];
  if (request.system.length > 0) messages.push({ role: 'system', content: textOf(request.system) });
  request.messages.forEach((message, at) => {
    if (message.role === 'system') {
      messages.push({ role: 'system', content: textOf(message.parts.filter((part) => part.type === 'text')) });
      return;
    }
    if (message.role === 'assistant') {
      const calls = message.parts.filter((part) => part.type === 'tool_use').map((part) => ({ id: part.id, type: 'function', function: { name: part.name, arguments: JSON.stringify(part.input) } }));
      const text = textOf(message.parts.filter((part) => part.type === 'text'));
      // A turn of thinking alone has nothing chat completions carry: left out, not sent empty to be refused.
      if (!text && calls.length === 0) return;
      messages.push({ role: 'assistant', content: text || null, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
      return;
    }
    // Tool results first (they answer the turn before), then the user's own words.
    for (const part of message.parts) {
      if (part.type !== 'tool_result') continue;
      const text = textOf(part.content);
      messages.push({ role: 'tool', tool_call_id: part.toolUseId, content: part.isError ? `Error: ${text}` : text });
    }
    const own = userParts(message.parts.filter((part) => part.type !== 'tool_result'), at);
    if (own.length > 0) messages.push({ role: 'user', content: own.every((part) => part.type === 'text') ? textOf(own) : own });
  });
  return messages;
}

function toolChoice(request: ConversationRequest): unknown {
  const choice = request.toolChoice;
  if (!choice || !request.tools?.length) return undefined;
  if (choice.type === 'tool') return { type: 'function', function: { name: choice.name } };
  return { auto: 'auto', any: 'required', none: 'none' }[choice.type];
}

function toChat(request: ConversationRequest, upstreamModel: string, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { model: upstreamModel, messages: chatMessages(request), stream };
  if (stream) body.stream_options = { include_usage: true };
  if (request.maxOutputTokens !== undefined) body.max_tokens = request.maxOutputTokens;
  if (request.stopSequences?.length) body.stop = request.stopSequences.slice(0, 4);
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.user) body.user = request.user;
  if (request.reasoningEffort) body.reasoning_effort = request.reasoningEffort;
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => ({ type: 'function', function: { name: tool.name, ...(tool.description ? { description: tool.description } : {}), parameters: tool.inputSchema } }));
    const choice = toolChoice(request);
    if (choice !== undefined) body.tool_choice = choice;
    if (request.toolChoice?.parallel === false) body.parallel_tool_calls = false;
  }
  if (request.responseFormat?.type === 'json') {
    body.response_format = request.responseFormat.schema
      ? { type: 'json_schema', json_schema: { name: request.responseFormat.name ?? 'reply', schema: request.responseFormat.schema } }
      : { type: 'json_object' };
  }
  return body;
}

const STOP_REASONS: Record<string, StopReason> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', function_call: 'tool_use', content_filter: 'refusal' };
const stopReasonOf = (finish: unknown): StopReason => STOP_REASONS[String(finish)] ?? 'end_turn';

type ChatUsage = { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number }; completion_tokens_details?: { reasoning_tokens?: number } };

/** OpenAI's prompt counts its cached tokens; the conversation's input does not. */
function usageOf(usage: ChatUsage | undefined): ConversationUsage {
  const cached = usage?.prompt_tokens_details?.cached_tokens;
  const reasoning = usage?.completion_tokens_details?.reasoning_tokens;
  return {
    inputTokens: Math.max(0, (usage?.prompt_tokens ?? 0) - (cached ?? 0)),
    outputTokens: usage?.completion_tokens ?? 0,
    ...(typeof cached === 'number' ? { cacheReadTokens: cached } : {}),
    ...(typeof reasoning === 'number' ? { reasoningTokens: reasoning } : {}),
  };
}

function parseArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    /* not JSON: `{}` */
  }
  return {};
}

function fromChatReply(raw: unknown): ConversationReply {
  const body = asObject(raw, 'reply');
  rejectErrorBody(body);
  const choice = (Array.isArray(body.choices) ? body.choices[0] : undefined) as { message?: Record<string, unknown>; finish_reason?: unknown } | undefined;
  if (!choice?.message) throw upstreamFailure.protocol('the upstream reply has no choices');
  const message = choice.message as { content?: unknown; reasoning_content?: unknown; tool_calls?: { id: string; function: { name: string; arguments: string } }[] };
  const parts: ConversationPart[] = [];
  if (typeof message.reasoning_content === 'string' && message.reasoning_content) parts.push({ type: 'thinking', thinking: message.reasoning_content });
  if (typeof message.content === 'string' && message.content) parts.push({ type: 'text', text: message.content });
  for (const call of message.tool_calls ?? []) parts.push({ type: 'tool_use', id: call.id, name: call.function.name, input: parseArguments(call.function.arguments) });
  return { id: String(body.id ?? ''), parts, stopReason: stopReasonOf(choice.finish_reason), usage: usageOf(body.usage as ChatUsage | undefined) };
}

type ChunkDelta = { content?: unknown; reasoning_content?: unknown; tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[] };

function fromChatChunk(raw: unknown, state: Record<string, unknown>): ConversationEvent[] {
  const chunk = asObject(raw, 'stream chunk');
  rejectErrorBody(chunk);
  const events: ConversationEvent[] = [];
  if (!state.started) {
    state.started = true;
    events.push({ type: 'start', id: String(chunk.id ?? '') });
  }
  const calls = (state.calls ??= new Map<number, number>()) as Map<number, number>;
  for (const choice of (Array.isArray(chunk.choices) ? chunk.choices : []) as { delta?: ChunkDelta; finish_reason?: unknown }[]) {
    const delta = choice.delta ?? {};
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content) events.push({ type: 'thinking-delta', thinking: delta.reasoning_content });
    if (typeof delta.content === 'string' && delta.content) events.push({ type: 'text-delta', text: delta.content });
    for (const call of delta.tool_calls ?? []) {
      // A call begins with its first piece, which carries its id (an id is made for a server that sends none).
      if (!calls.has(call.index)) {
        calls.set(call.index, calls.size);
        events.push({ type: 'tool-call-start', call: calls.get(call.index)!, id: call.id ?? `toolu_${String(chunk.id ?? 'call')}_${call.index}`, name: call.function?.name ?? '' });
      }
      const at = calls.get(call.index);
      if (at !== undefined && call.function?.arguments) events.push({ type: 'tool-args-delta', call: at, json: call.function.arguments });
    }
    if (choice.finish_reason) events.push({ type: 'stop', stopReason: stopReasonOf(choice.finish_reason) });
  }
  if (chunk.usage) events.push({ type: 'usage', usage: usageOf(chunk.usage as ChatUsage) });
  return events;
}

export const chatConversation: ProviderConversation = {
  toUpstream: toChat,
  fromReply: fromChatReply,
  fromEvent: fromChatChunk,
  streamEnd: { name: '[DONE]', isMarker: (data) => data.trim() === '[DONE]' },
};
