/**
 * A conversation reply as a chat completion (see door.ts): text as the message's content,
 * thinking as `reasoning_content` (as the OpenAI-compatible reasoning models write it), tool uses
 * as `tool_calls`; usage in OpenAI's fields, cached and reasoning tokens in their details.
 * Dropped: thinking signatures and redacted thinking (chat completions cannot carry them back).
 */
import { promptTokensOf, type ChatRequest, type ChatResponse, type ChatUsage, type ConversationReply, type ConversationUsage, type StopReason } from '@gateway/contracts';

const FINISH_REASONS: Record<StopReason, string> = { end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', max_tokens: 'length', tool_use: 'tool_calls', refusal: 'content_filter' };
export const chatFinishReasonOf = (stopReason: StopReason) => FINISH_REASONS[stopReason];

/** A count the provider did not report stays out of the details, never 0 (see reply.ts). */
export function chatUsageOf(usage: Partial<ConversationUsage>): ChatUsage {
  const prompt = promptTokensOf({ inputTokens: usage.inputTokens ?? 0, outputTokens: 0, ...usage });
  const completion = usage.outputTokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(usage.cacheReadTokens !== undefined ? { prompt_tokens_details: { cached_tokens: usage.cacheReadTokens } } : {}),
    ...(usage.reasoningTokens !== undefined ? { completion_tokens_details: { reasoning_tokens: usage.reasoningTokens } } : {}),
  };
}

/** A completion id as OpenAI's begin (`chatcmpl-`), from the provider's id. */
export const completionId = (id: string) => (id.startsWith('chatcmpl-') ? id : `chatcmpl-${id.replace(/[^A-Za-z0-9_-]/g, '') || Date.now().toString(36)}`);

export function conversationToChat(reply: ConversationReply, request: ChatRequest): ChatResponse {
  const text = reply.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  const reasoning = reply.parts.flatMap((part) => (part.type === 'thinking' ? [part.thinking] : [])).join('');
  const calls = reply.parts.flatMap((part, index) => (part.type === 'tool_use' ? [{ index, id: part.id, type: 'function' as const, function: { name: part.name, arguments: JSON.stringify(part.input) } }] : []));
  return {
    id: completionId(reply.id),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [{
      index: 0,
      message: {
        role: 'assistant',
        content: text || (calls.length > 0 ? null : ''),
        ...(reasoning ? { reasoning_content: reasoning } : {}),
        ...(calls.length > 0 ? { tool_calls: calls.map(({ index: _index, ...call }) => call) } : {}),
      },
      finish_reason: chatFinishReasonOf(reply.stopReason),
    }],
    usage: chatUsageOf(reply.usage),
  };
}
