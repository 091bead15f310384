/**
 * An OpenAI conversation as Anthropic's: system and developer messages become the top-level
 * `system`; user, assistant, tool and function messages become alternating user and assistant
 * turns of content blocks; tool calls become `tool_use` blocks and their results `tool_result`
 * blocks in the user turn that follows.
 */
import type { ChatMessage } from '@gateway/contracts';
import type { AnthropicMessage, ContentBlock, DocumentBlock, ImageBlock, TextBlock, ToolResultBlock, ToolUseBlock } from './wire.ts';
import { unsupported } from './unsupported.ts';

type Content = Extract<ChatMessage, { role: 'user' }>['content'];
type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;
/** A content part as the schema lets it through: a known type, or any other with its `type`. */
type Part = { type: string; [field: string]: unknown };

export interface AnthropicConversation {
  system: TextBlock[];
  messages: AnthropicMessage[];
}

export function toAnthropicConversation(chat: ChatMessage[]): AnthropicConversation {
  const system: TextBlock[] = [];
  const messages: AnthropicMessage[] = [];
  // Anthropic wants user and assistant turns to alternate: a message of the role of the one
  // before joins it (two tool results, or a tool result and the user's next words, are one turn).
  const add = (role: AnthropicMessage['role'], blocks: ContentBlock[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    // A loop, not push(...blocks): spread into a call puts every block on the stack, and 150,000
    // parts threw "Maximum call stack size exceeded".
    if (last?.role === role) for (const block of blocks) last.content.push(block);
    else messages.push({ role, content: blocks });
  };
  // A legacy function call has no id: it gets one, and the function message after it answers it.
  let lastFunctionCallId: string | undefined;
  chat.forEach((message, at) => {
    const path = `messages[${at}].content`;
    switch (message.role) {
      case 'system':
      case 'developer':
        for (const block of textBlocks(message.content, path)) system.push(block);
        break;
      case 'user':
        add('user', contentBlocks(message.content, path));
        break;
      case 'assistant': {
        const calls = toolUses(message, at);
        if (message.function_call) lastFunctionCallId = calls.at(-1)!.id;
        add('assistant', [...contentBlocks(message.content ?? [], path), ...calls]);
        break;
      }
      case 'tool':
        add('user', [toolResult(message.tool_call_id, typeof message.content === 'string' ? message.content : textBlocks(message.content, path))]);
        break;
      case 'function':
        add('user', [toolResult(lastFunctionCallId ?? legacyCallId(at), message.content ?? '')]);
        break;
    }
  });
  return { system, messages };
}

const legacyCallId = (at: number) => `call_function_${at}`;

function toolUses(message: AssistantMessage, at: number): ToolUseBlock[] {
  const calls: ToolUseBlock[] = (message.tool_calls ?? []).map((call) => ({
    type: 'tool_use',
    id: call.id,
    name: call.function.name,
    input: toolInput(call.function.arguments),
  }));
  if (message.function_call) {
    calls.push({ type: 'tool_use', id: legacyCallId(at), name: message.function_call.name, input: toolInput(message.function_call.arguments) });
  }
  return calls;
}

/**
 * Tool-call arguments as the JSON object Anthropic wants. Arguments that are not one (often a
 * reply cut off at max_tokens) become `{}`: the call is history, its result follows in a tool
 * message, and OpenAI takes such arguments as they are, so refusing the request would leave the
 * conversation unable to go on through an Anthropic channel alone.
 */
function toolInput(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    /* not JSON: `{}` below */
  }
  return {};
}

/** Anthropic takes a tool result without content, not with an empty one. */
function toolResult(id: string, content: string | TextBlock[]): ToolResultBlock {
  return content.length > 0 ? { type: 'tool_result', tool_use_id: id, content } : { type: 'tool_result', tool_use_id: id };
}

/** Text content (a system or tool message): Anthropic takes no other part there. Empty text is left out, as Anthropic refuses it. */
function textBlocks(content: Content, path: string): TextBlock[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  return (content as Part[]).flatMap((part, at): TextBlock[] => {
    if (part.type !== 'text') throw unsupported(`${path}[${at}]`, `a "${part.type}" part in this message`);
    return part.text ? [{ type: 'text', text: part.text as string }] : [];
  });
}

function contentBlocks(content: Content, path: string): ContentBlock[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  return (content as Part[]).flatMap((part, at): ContentBlock[] => {
    const where = `${path}[${at}]`;
    switch (part.type) {
      case 'text':
        return part.text ? [{ type: 'text', text: part.text as string }] : [];
      case 'refusal':
        return part.refusal ? [{ type: 'text', text: part.refusal as string }] : [];
      case 'image_url':
        return [imageBlock((part.image_url as { url: string }).url, where)];
      case 'file':
        return [documentBlock(part.file as { file_data?: string | null }, where)];
      case 'input_audio':
        throw unsupported(where, 'audio input');
      default:
        throw unsupported(where, `a "${part.type}" content part`);
    }
  });
}

/** `data:<type>;base64,` (an image sent inline), read without scanning the data itself. */
const BASE64_DATA_URL = /^data:([^;,]+);base64,/;

/** An inline image as base64 data with its media type; any other URL is Anthropic's to fetch. */
function imageBlock(url: string, where: string): ImageBlock {
  if (!url.startsWith('data:')) return { type: 'image', source: { type: 'url', url } };
  const header = BASE64_DATA_URL.exec(url);
  if (!header) throw unsupported(where, 'an image data URL that is not base64');
  return { type: 'image', source: { type: 'base64', media_type: header[1]!, data: url.slice(header[0].length) } };
}

/** A PDF sent inline; an OpenAI file id means nothing to Anthropic, and it reads no other file type as a document. */
function documentBlock(file: { file_data?: string | null }, where: string): DocumentBlock {
  const header = file.file_data ? BASE64_DATA_URL.exec(file.file_data) : null;
  if (header?.[1] !== 'application/pdf') throw unsupported(where, 'a file other than a PDF given inline as file_data');
  return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: file.file_data!.slice(header[0].length) } };
}
