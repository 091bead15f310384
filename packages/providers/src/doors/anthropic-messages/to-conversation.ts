/** A Messages request as the conversation model's (see door.ts). */
import type {
  CacheMark,
  ConversationMessage,
  ConversationPart,
  ConversationRequest,
  ConversationToolChoice,
  ImagePart,
  MediaSource,
  MessagesBlock,
  MessagesRequest,
  TextPart,
} from '@gateway/contracts';
import { badRequest } from '@gateway/contracts';

type Loose = Record<string, unknown>;

function cacheOf(block: Loose): CacheMark | undefined {
  const mark = block.cache_control as { type?: string; ttl?: string } | null | undefined;
  if (!mark || mark.type !== 'ephemeral') return undefined;
  return mark.ttl ? { type: 'ephemeral', ttl: mark.ttl } : { type: 'ephemeral' };
}

function sourceOf(source: Loose, path: string): MediaSource {
  if (source.type === 'base64' && typeof source.data === 'string') return { kind: 'base64', mediaType: String(source.media_type ?? ''), data: source.data };
  if (source.type === 'url' && typeof source.url === 'string') return { kind: 'url', url: source.url };
  if (source.type === 'text' && typeof source.data === 'string') return { kind: 'text', mediaType: String(source.media_type ?? 'text/plain'), data: source.data };
  throw badRequest(`${path}.source: a source of type ${String(source.type)} can only go to an anthropic channel`, `${path}.source`);
}

const withCache = <P extends ConversationPart>(part: P, block: Loose): P => {
  const cache = cacheOf(block);
  return cache ? { ...part, cache } : part;
};

function partOf(block: MessagesBlock, path: string): ConversationPart {
  const b = block as Loose;
  switch (block.type) {
    case 'text':
      return withCache({ type: 'text', text: String(b.text) }, b);
    case 'image':
      return withCache({ type: 'image', source: sourceOf(b.source as Loose, path) }, b);
    case 'document':
      return withCache({ type: 'document', source: sourceOf(b.source as Loose, path), ...(typeof b.title === 'string' ? { title: b.title } : {}) }, b);
    case 'tool_use':
      return withCache({ type: 'tool_use', id: String(b.id), name: String(b.name), input: b.input as Record<string, unknown> }, b);
    case 'tool_result': {
      const content = typeof b.content === 'string' ? [{ type: 'text' as const, text: b.content }] : ((b.content ?? []) as MessagesBlock[]).map((inner, at) => partOf(inner, `${path}.content[${at}]`));
      const results = content.filter((part): part is TextPart | ImagePart => part.type === 'text' || part.type === 'image');
      return withCache({ type: 'tool_result', toolUseId: String(b.tool_use_id), content: results, ...(b.is_error === true ? { isError: true } : {}) }, b);
    }
    case 'thinking':
      return { type: 'thinking', thinking: String(b.thinking), ...(typeof b.signature === 'string' ? { signature: b.signature } : {}) };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: String(b.data) };
    default:
      throw badRequest(`${path}: a content block of type ${block.type} can only go to an anthropic channel`, path);
  }
}

function toolChoiceOf(choice: MessagesRequest['tool_choice']): ConversationToolChoice | undefined {
  if (!choice) return undefined;
  const parallel = choice.disable_parallel_tool_use === true ? { parallel: false } : {};
  if (choice.type === 'tool') return { type: 'tool', name: String(choice.name ?? ''), ...parallel };
  return { type: choice.type, ...parallel };
}

function roleOf(role: string, at: number): ConversationMessage['role'] {
  if (role === 'user' || role === 'assistant' || role === 'system') return role;
  throw badRequest(`messages[${at}].role: a message of role ${role} can only go to an anthropic channel`, `messages[${at}].role`);
}

export function messagesToConversation(request: MessagesRequest): ConversationRequest {
  const system: TextPart[] = typeof request.system === 'string'
    ? (request.system ? [{ type: 'text', text: request.system }] : [])
    : (request.system ?? []).map((block) => withCache({ type: 'text', text: block.text }, block as Loose));
  const messages: ConversationMessage[] = request.messages.map((message, at) => ({
    role: roleOf(message.role, at),
    parts: typeof message.content === 'string'
      ? [{ type: 'text', text: message.content }]
      : message.content.map((block, index) => partOf(block, `messages[${at}].content[${index}]`)),
  }));
  const conversation: ConversationRequest = { model: request.model, system, messages, maxOutputTokens: request.max_tokens, stream: request.stream === true };
  if (request.tools) {
    conversation.tools = request.tools.map((tool) => ({
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      inputSchema: tool.input_schema ?? { type: 'object', properties: {} },
      ...(cacheOf(tool as Loose) ? { cache: cacheOf(tool as Loose) } : {}),
    }));
  }
  const toolChoice = toolChoiceOf(request.tool_choice);
  if (toolChoice) conversation.toolChoice = toolChoice;
  if (request.stop_sequences?.length) conversation.stopSequences = request.stop_sequences;
  if (request.temperature !== undefined) conversation.temperature = request.temperature;
  if (request.top_p !== undefined) conversation.topP = request.top_p;
  if (request.top_k !== undefined) conversation.topK = request.top_k;
  // 'enabled' with a budget, 'adaptive' without: either asks for reasoning; 'disabled' does not.
  if (request.thinking && request.thinking.type !== 'disabled') conversation.thinking = request.thinking.budget_tokens !== undefined ? { budgetTokens: request.thinking.budget_tokens } : {};
  if (typeof request.metadata?.user_id === 'string') conversation.user = request.metadata.user_id;
  return conversation;
}
