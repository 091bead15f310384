/**
 * A Responses request as the conversation model's (see door.ts). The input's items become turns:
 * messages by their role (system and developer ones join `instructions` as the system prompt),
 * `function_call` items the assistant's tool uses, `function_call_output` items the user's tool
 * results, `reasoning` items thinking (its summary the text, its `encrypted_content` the
 * signature a provider replays). An `item_reference` has been looked up by the gateway before;
 * one left is a 400. Custom (freeform) tools, as Codex's apply_patch, become functions of one
 * string; a namespace's tools are offered one by one, and OpenAI's hosted tools are left out
 * (offered-tools.ts): only an upstream of the Responses API runs them, and a channel of one passes its
 * requests through untranslated (openai/responses.ts).
 */
import {
  badRequest,
  type ConversationMessage,
  type ConversationPart,
  type ConversationRequest,
  type ConversationTool,
  type ConversationToolChoice,
  type MediaSource,
  type ResponsesInputItem,
  type ResponsesRequest,
  type TextPart,
} from '@gateway/contracts';
import { offeredTools } from './offered-tools.ts';

type Loose = Record<string, unknown>;

/** A data: URL as base64, any other as a URL. */
function sourceOfUrl(url: string): MediaSource {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return data ? { kind: 'base64', mediaType: data[1]!, data: data[2]! } : { kind: 'url', url };
}

function partOf(part: Loose, path: string): ConversationPart {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return { type: 'text', text: String(part.text ?? '') };
    case 'refusal':
      return { type: 'text', text: String(part.refusal ?? '') };
    case 'input_image':
      if (typeof part.image_url !== 'string') throw badRequest(`${path}: an input_image needs an image_url (a file_id is not served here)`, path);
      return { type: 'image', source: sourceOfUrl(part.image_url) };
    case 'input_file':
      if (typeof part.file_data === 'string') {
        const source = part.file_data.startsWith('data:') ? sourceOfUrl(part.file_data) : { kind: 'base64' as const, mediaType: 'application/pdf', data: part.file_data };
        return { type: 'document', source, ...(typeof part.filename === 'string' ? { title: part.filename } : {}) };
      }
      if (typeof part.file_url === 'string') return { type: 'document', source: { kind: 'url', url: part.file_url } };
      throw badRequest(`${path}: an input_file needs file_data or file_url (a file_id is not served here)`, path);
    default:
      throw badRequest(`${path}: a content part of type ${String(part.type)} is not served by this gateway`, path);
  }
}

const partsOf = (content: string | Loose[], path: string): ConversationPart[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : content.map((part, at) => partOf(part, `${path}.content[${at}]`));

/** Turns from items: a part joins the last turn when it has the same role, as providers want turns to alternate. */
function conversationOf(items: ResponsesInputItem[], system: TextPart[]): ConversationMessage[] {
  const messages: ConversationMessage[] = [];
  const add = (role: 'user' | 'assistant', parts: ConversationPart[]) => {
    const last = messages.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else messages.push({ role, parts });
  };
  items.forEach((raw, at) => {
    const item = raw as Loose;
    const path = `input[${at}]`;
    switch (item.type ?? 'message') {
      case 'message': {
        const parts = partsOf(item.content as string | Loose[], path);
        if (item.role === 'system' || item.role === 'developer') system.push(...parts.filter((part): part is TextPart => part.type === 'text'));
        else add(item.role as 'user' | 'assistant', parts);
        return;
      }
      case 'function_call':
        add('assistant', [{ type: 'tool_use', id: String(item.call_id), name: String(item.name), input: argumentsOf(String(item.arguments), path) }]);
        return;
      case 'custom_tool_call':
        add('assistant', [{ type: 'tool_use', id: String(item.call_id), name: String(item.name), input: { input: String(item.input) } }]);
        return;
      case 'function_call_output':
      case 'custom_tool_call_output': {
        const output = typeof item.output === 'string' ? [{ type: 'text' as const, text: item.output }] : partsOf(item.output as Loose[], path);
        const content = output.filter((part) => part.type === 'text' || part.type === 'image');
        add('user', [{ type: 'tool_result', toolUseId: String(item.call_id), content }]);
        return;
      }
      case 'reasoning': {
        const summary = ((item.summary ?? []) as { text: string }[]).map((part) => part.text).join('\n');
        const signature = typeof item.encrypted_content === 'string' ? { signature: item.encrypted_content } : {};
        add('assistant', [{ type: 'thinking', thinking: summary, ...signature }]);
        return;
      }
      default:
        throw badRequest(`${path}: no stored item ${String(item.id)} of yours`, path);
    }
  });
  return messages;
}

function argumentsOf(text: string, path: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text || '{}');
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    /* refused below */
  }
  throw badRequest(`${path}.arguments: must be a JSON object`, `${path}.arguments`);
}

/**
 * A custom (freeform) tool as a function of one string, `input`: providers take JSON arguments
 * only. Its grammar, where it has one, is told in the description; the door gives the call back
 * as a `custom_tool_call` with that string (from-conversation.ts).
 */
function customTool(tool: Loose): ConversationTool {
  const format = tool.format as { type?: string; syntax?: string; definition?: string } | undefined;
  const grammar = format?.type === 'grammar' && format.definition ? ` It must follow this ${format.syntax ?? ''} grammar:\n${format.definition}` : '';
  return {
    name: String(tool.name),
    ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
    inputSchema: { type: 'object', properties: { input: { type: 'string', description: `The tool's raw input, as one string.${grammar}` } }, required: ['input'] },
  };
}


/** An effort name as the conversation model's: `none` asks for no reasoning, `xhigh` (and any above) for the most. */
function effortOf(effort: string | null | undefined): ConversationRequest['reasoningEffort'] {
  if (!effort || effort === 'none') return undefined;
  if (effort === 'minimal' || effort === 'low' || effort === 'medium' || effort === 'high') return effort;
  return 'high';
}

function toolChoiceOf(request: ResponsesRequest): ConversationToolChoice | undefined {
  const parallel = request.parallel_tool_calls === false ? { parallel: false } : {};
  const choice = request.tool_choice;
  if (choice === undefined) return request.parallel_tool_calls === false ? { type: 'auto', parallel: false } : undefined;
  if (typeof choice === 'string') return { type: ({ auto: 'auto', none: 'none', required: 'any' } as const)[choice], ...parallel };
  return { type: 'tool', name: choice.name, ...parallel };
}

export function responsesToConversation(request: ResponsesRequest): ConversationRequest {
  const system: TextPart[] = request.instructions ? [{ type: 'text', text: request.instructions }] : [];
  const items: ResponsesInputItem[] = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : (request.input ?? []);
  const messages = conversationOf(items, system);
  if (messages.length === 0) throw badRequest('input: must hold at least one message or item', 'input');
  const conversation: ConversationRequest = { model: request.model, system, messages, stream: request.stream === true };
  const tools = offeredTools(request);
  if (tools.length > 0) {
    conversation.tools = tools.map(({ tool, path }) => {
      if (tool.type === 'custom') return customTool(tool);
      const { name, description, parameters } = tool;
      if (typeof name !== 'string' || name === '') throw badRequest(`${path}.name: a function tool needs a name`, `${path}.name`);
      return { name, ...(typeof description === 'string' && description ? { description } : {}), inputSchema: (parameters as Record<string, unknown> | null | undefined) ?? { type: 'object', properties: {} } };
    });
    const choice = toolChoiceOf(request);
    if (choice) conversation.toolChoice = choice;
  }
  const format = request.text?.format;
  if (format?.type === 'json_schema') conversation.responseFormat = { type: 'json', name: String(format.name), schema: format.schema as Record<string, unknown> };
  else if (format?.type === 'json_object') conversation.responseFormat = { type: 'json' };
  if (request.max_output_tokens != null) conversation.maxOutputTokens = request.max_output_tokens;
  if (request.temperature != null) conversation.temperature = request.temperature;
  if (request.top_p != null) conversation.topP = request.top_p;
  const effort = effortOf(request.reasoning?.effort);
  if (effort) conversation.reasoningEffort = effort;
  if (request.user) conversation.user = request.user;
  return conversation;
}
