/**
 * A chat completions request as the conversation model's (see door.ts), for a provider of
 * another format (an `openai` channel takes the request as it came, openai/chat.ts). System and
 * developer messages before the first turn are the system; later ones stay where they stood.
 * Consecutive tool messages become one user turn of tool results, as every provider wants them.
 *
 * Refused, naming the field: more than one choice, logprobs, audio in or out, a file by id (it
 * belongs to the OpenAI project), custom and allowed-tools choices, and the legacy `functions`
 * API (send `tools`). Dropped: penalties, `logit_bias`, `seed`, `store`, `metadata`,
 * `prediction`, a message's `name`.
 */
import { badRequest, type ChatRequest, type ConversationMessage, type ConversationPart, type ConversationRequest, type ConversationToolChoice, type MediaSource, type TextPart } from '@gateway/contracts';

const ONLY_OPENAI = 'can only go to an openai channel';
type Loose = Record<string, unknown>;

/** `data:<type>;base64,<data>` inline, any other URL by reference. */
function sourceOfUrl(url: string): MediaSource {
  const inline = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return inline ? { kind: 'base64', mediaType: inline[1]!, data: inline[2]! } : { kind: 'url', url };
}

function partOf(part: Loose, path: string): ConversationPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: String(part.text) };
    case 'refusal':
      return { type: 'text', text: String(part.refusal) };
    case 'image_url':
      return { type: 'image', source: sourceOfUrl(String((part.image_url as Loose).url)) };
    case 'file': {
      const file = part.file as Loose;
      if (typeof file.file_data !== 'string') throw badRequest(`${path}: a file by id ${ONLY_OPENAI}; send its bytes as file_data`, path);
      return { type: 'document', source: sourceOfUrl(file.file_data), ...(typeof file.filename === 'string' ? { title: file.filename } : {}) };
    }
    default:
      throw badRequest(`${path}: a content part of type ${String(part.type)} ${ONLY_OPENAI}`, path);
  }
}

function partsOf(content: unknown, path: string): ConversationPart[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  return (content as Loose[]).map((part, at) => partOf(part, `${path}[${at}]`));
}

const textOf = (parts: ConversationPart[]) => parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

function argumentsOf(text: string, path: string): Record<string, unknown> {
  try {
    const args = JSON.parse(text || '{}') as unknown;
    if (args !== null && typeof args === 'object' && !Array.isArray(args)) return args as Record<string, unknown>;
  } catch {
    // refused below
  }
  throw badRequest(`${path}: must be a JSON object`, path);
}

function messagesOf(request: ChatRequest): { system: TextPart[]; messages: ConversationMessage[] } {
  const system: TextPart[] = [];
  const messages: ConversationMessage[] = [];
  for (const [at, message] of (request.messages as Loose[]).entries()) {
    const path = `messages[${at}].content`;
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(partsOf(message.content, path));
        if (messages.length === 0) system.push({ type: 'text', text });
        else messages.push({ role: 'system', parts: [{ type: 'text', text }] });
        break;
      }
      case 'user':
        messages.push({ role: 'user', parts: partsOf(message.content, path) });
        break;
      case 'assistant': {
        if (message.function_call) throw badRequest(`messages[${at}].function_call: the legacy functions API ${ONLY_OPENAI}; send tool_calls`, `messages[${at}].function_call`);
        const calls = ((message.tool_calls ?? []) as { id: string; function: { name: string; arguments: string } }[]).map((call, index): ConversationPart => ({
          type: 'tool_use', id: call.id, name: call.function.name, input: argumentsOf(call.function.arguments, `messages[${at}].tool_calls[${index}].function.arguments`),
        }));
        messages.push({ role: 'assistant', parts: [...partsOf(message.content, path), ...calls] });
        break;
      }
      case 'tool': {
        const result: ConversationPart = { type: 'tool_result', toolUseId: String(message.tool_call_id), content: [{ type: 'text', text: textOf(partsOf(message.content, path)) }] };
        const previous = messages.at(-1);
        if (previous?.role === 'user' && previous.parts.every((part) => part.type === 'tool_result')) previous.parts.push(result);
        else messages.push({ role: 'user', parts: [result] });
        break;
      }
      default:
        throw badRequest(`messages[${at}].role: a message of role ${String(message.role)} ${ONLY_OPENAI}`, `messages[${at}].role`);
    }
  }
  return { system, messages };
}

function toolChoiceOf(request: ChatRequest): ConversationToolChoice | undefined {
  const choice = request.tool_choice as string | Loose | undefined;
  const parallel = request.parallel_tool_calls === false ? { parallel: false } : {};
  if (choice === undefined) return request.parallel_tool_calls === false ? { type: 'auto', parallel: false } : undefined;
  if (choice === 'none' || choice === 'auto') return { type: choice, ...parallel };
  if (choice === 'required') return { type: 'any', ...parallel };
  if (typeof choice === 'object' && choice.type === 'function') return { type: 'tool', name: String((choice.function as Loose).name), ...parallel };
  throw badRequest(`tool_choice: a choice of type ${String((choice as Loose).type)} ${ONLY_OPENAI}`, 'tool_choice');
}

function refuseWhatOnlyOpenaiRuns(request: ChatRequest): void {
  const refuse = (field: string, what: string) => {
    throw badRequest(`${field}: ${what} ${ONLY_OPENAI}`, field);
  };
  if ((request.n ?? 1) > 1) refuse('n', 'more than one choice');
  if (request.logprobs) refuse('logprobs', 'logprobs');
  if (request.modalities?.includes('audio') || request.audio) refuse('audio', 'audio output');
  if (request.functions || request.function_call) refuse(request.functions ? 'functions' : 'function_call', 'the legacy functions API (send tools)');
}

const EFFORTS = { minimal: 'minimal', low: 'low', medium: 'medium', high: 'high', xhigh: 'high' } as const;

export function chatToConversation(request: ChatRequest): ConversationRequest {
  refuseWhatOnlyOpenaiRuns(request);
  const { system, messages } = messagesOf(request);
  const conversation: ConversationRequest = { model: request.model, system, messages, stream: request.stream === true };
  if (request.tools?.length) {
    conversation.tools = request.tools.map((tool) => ({
      name: tool.function.name,
      ...(tool.function.description ? { description: tool.function.description } : {}),
      inputSchema: (tool.function.parameters as Record<string, unknown> | undefined) ?? { type: 'object', properties: {} },
    }));
  }
  const choice = toolChoiceOf(request);
  if (choice) conversation.toolChoice = choice;
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (maxTokens != null) conversation.maxOutputTokens = maxTokens;
  if (request.stop != null) conversation.stopSequences = Array.isArray(request.stop) ? request.stop : [request.stop];
  if (request.temperature != null) conversation.temperature = request.temperature;
  if (request.top_p != null) conversation.topP = request.top_p;
  const format = request.response_format as Loose | undefined;
  if (format?.type === 'json_schema') {
    const schema = format.json_schema as { name: string; schema?: Record<string, unknown> };
    conversation.responseFormat = { type: 'json', name: schema.name, ...(schema.schema ? { schema: schema.schema } : {}) };
  } else if (format?.type === 'json_object') conversation.responseFormat = { type: 'json' };
  const effort = request.reasoning_effort && request.reasoning_effort !== 'none' ? EFFORTS[request.reasoning_effort] : undefined;
  if (effort) conversation.reasoningEffort = effort;
  if (request.user) conversation.user = request.user;
  return conversation;
}
