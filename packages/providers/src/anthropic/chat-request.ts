/**
 * A chat completions request as a Messages API request: the conversation (`chat-messages.ts`),
 * then each other field as the table at the top of `chat.ts` says.
 */
import { CHAT_DEFAULT_MAX_TOKENS, type ChatRequest } from '@gateway/contracts';
import type { AnthropicRequest, AnthropicTool, AnthropicToolChoice, TextBlock } from './wire.ts';
import { toAnthropicConversation } from './chat-messages.ts';
import { unsupported } from './unsupported.ts';

/**
 * Whether the client uses the legacy `functions`: it then reads a reply's call as
 * `function_call`, and OpenAI made at most one such call a turn.
 */
export const usesLegacyFunctions = (request: ChatRequest) => request.tools == null && request.functions != null;

export function toAnthropicRequest(request: ChatRequest, upstreamModel: string, stream: boolean): AnthropicRequest {
  refuseWhatAnthropicCannotDo(request);
  const { system, messages } = toAnthropicConversation(request.messages);
  const body: AnthropicRequest = {
    model: upstreamModel,
    messages,
    // Anthropic requires a limit; the gateway holds the same default against the key's quota.
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? CHAT_DEFAULT_MAX_TOKENS,
    stream,
  };
  const instruction = responseFormatInstruction(request.response_format);
  if (system.length > 0 || instruction) body.system = instruction ? [...system, instruction] : system;
  // Anthropic's temperature runs 0 to 1 where OpenAI's runs 0 to 2. Clamped, not halved: a
  // client's 0.7 or 1 keeps the meaning it was tuned for, and above 1 (more random than the
  // default) 1 is Anthropic's most random. Recent Claude models refuse temperature and top_p
  // together, so top_p goes only without a temperature.
  if (request.temperature != null) body.temperature = Math.min(request.temperature, 1);
  else if (request.top_p != null) body.top_p = request.top_p;
  const stop = stopSequences(request.stop);
  if (stop.length > 0) body.stop_sequences = stop;
  if (request.user) body.metadata = { user_id: request.user };
  const tools = toolDefinitions(request);
  if (tools.length > 0) {
    body.tools = tools;
    const choice = toolChoice(request);
    if (choice) body.tool_choice = choice;
  }
  return body;
}

function refuseWhatAnthropicCannotDo(request: ChatRequest): void {
  if (request.n != null && request.n > 1) throw unsupported('n', 'more than one choice');
  if (request.modalities?.includes('audio') || request.audio != null) throw unsupported('modalities', 'audio output');
}

/**
 * Anthropic refuses a stop sequence that is only whitespace; OpenAI's common `"\n"` is left out
 * (the reply may then run past the line it would have stopped at).
 */
function stopSequences(stop: ChatRequest['stop']): string[] {
  const all = typeof stop === 'string' ? [stop] : (stop ?? []);
  return all.filter((sequence) => sequence.trim() !== '');
}

/**
 * JSON output asked for with an instruction appended to the system prompt. Anthropic's own
 * structured outputs are not used: not every Claude model takes them, and they refuse JSON
 * Schema keywords OpenAI accepts. The instruction works with every model; it is not a guarantee.
 */
function responseFormatInstruction(format: ChatRequest['response_format']): TextBlock | undefined {
  if (format?.type === 'json_object') {
    return { type: 'text', text: 'Respond with one valid JSON object and nothing else: no prose, no code fences.' };
  }
  if (format?.type === 'json_schema') {
    const { name, description, schema } = format.json_schema;
    const about = description ? ` (${description})` : '';
    return {
      type: 'text',
      text: `Respond with one valid JSON value and nothing else (no prose, no code fences) that matches this JSON Schema, named "${name}"${about}:\n${JSON.stringify(schema ?? {})}`,
    };
  }
  return undefined;
}

/** Anthropic requires an object schema; a function without parameters takes none. */
function toolDefinitions(request: ChatRequest): AnthropicTool[] {
  const functions = request.tools?.map((tool) => tool.function) ?? request.functions ?? [];
  return functions.map((fn) => ({
    name: fn.name,
    ...(fn.description ? { description: fn.description } : {}),
    input_schema: fn.parameters ?? { type: 'object', properties: {} },
  }));
}

function toolChoice(request: ChatRequest): AnthropicToolChoice | undefined {
  const legacy = usesLegacyFunctions(request);
  const choice = legacy ? legacyChoice(request.function_call) : request.tool_choice;
  const oneCall = legacy || request.parallel_tool_calls === false;
  let mapped: Exclude<AnthropicToolChoice, { type: 'none' }>;
  if (choice == null) {
    if (!oneCall) return undefined;
    mapped = { type: 'auto' };
  } else if (choice === 'none') {
    return { type: 'none' };
  } else if (choice === 'auto') {
    mapped = { type: 'auto' };
  } else if (choice === 'required') {
    mapped = { type: 'any' };
  } else if (choice.type === 'function') {
    mapped = { type: 'tool', name: (choice.function as { name: string }).name };
  } else {
    throw unsupported('tool_choice', `a tool_choice of type "${choice.type}"`);
  }
  return oneCall ? { ...mapped, disable_parallel_tool_use: true } : mapped;
}

/** The legacy `function_call` as the `tool_choice` it stands for. */
function legacyChoice(functionCall: ChatRequest['function_call']): ChatRequest['tool_choice'] {
  if (functionCall == null || typeof functionCall === 'string') return functionCall;
  return { type: 'function', function: { name: functionCall.name } };
}
