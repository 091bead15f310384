/** A conversation reply as a Messages reply (see door.ts). */
import type { ConversationPart, ConversationReply, ConversationUsage, MessagesRequest, MessagesResponse, MessagesUsage } from '@gateway/contracts';

/** A part as a content block; the cache marks of a request never appear in a reply. */
export function blockOf(part: ConversationPart): Record<string, unknown> {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'tool_use':
      return { type: 'tool_use', id: part.id, name: part.name, input: part.input };
    case 'thinking':
      return { type: 'thinking', thinking: part.thinking, signature: part.signature ?? '' };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: part.data };
    default:
      return { type: 'text', text: '' };
  }
}

/** Usage in Anthropic's fields: cache reads as `cache_read_input_tokens`, outside `input_tokens`. */
export function messagesUsageOf(usage: Partial<ConversationUsage>): MessagesUsage {
  return {
    input_tokens: usage.inputTokens ?? 0,
    cache_creation_input_tokens: usage.cacheWriteTokens ?? 0,
    cache_read_input_tokens: usage.cacheReadTokens ?? 0,
    output_tokens: usage.outputTokens ?? 0,
  };
}

/** A message id as Anthropic's begin (`msg_`), from the provider's id. */
export const messageId = (id: string) => (id.startsWith('msg_') ? id : `msg_${id.replace(/[^A-Za-z0-9_-]/g, '') || Date.now().toString(36)}`);

export function conversationToMessages(reply: ConversationReply, request: MessagesRequest): MessagesResponse {
  return {
    id: messageId(reply.id),
    type: 'message',
    role: 'assistant',
    model: request.model,
    content: reply.parts.map(blockOf),
    stop_reason: reply.stopReason,
    stop_sequence: reply.stopSequence ?? null,
    usage: messagesUsageOf(reply.usage),
  };
}
