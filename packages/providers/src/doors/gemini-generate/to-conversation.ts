/**
 * A Gemini GenerateContent request as the conversation model's (see door.ts). Function calls and
 * their responses are paired by the call's `id`, or where the client sent none (Gemini's own
 * calls carry none) by name, in order, so a provider that pairs tool results by id gets ids
 * that match.
 *
 * Refused, naming the field: what only Gemini runs (code execution, its parts and tool), more
 * than one candidate, an output modality other than text. Dropped: safety settings, labels,
 * `store`, the service tier, penalties, seed, logprobs, media resolution (a provider of another
 * format has no such field), and a `thoughtSignature` on a part that is not a thought (Gemini's
 * own, which only Gemini reads).
 */
import { badRequest, type ConversationMessage, type ConversationPart, type ConversationRequest, type ConversationToolChoice, type GeminiChatRequest, type GeminiPart, type TextPart } from '@gateway/contracts';
import { jsonSchemaOf } from './openapi-schema.ts';

const ONLY_GEMINI = 'can only go to a gemini channel';

/** Ids of the calls not yet answered, by function name, first made first answered. */
class PendingCalls {
  private readonly byName = new Map<string, string[]>();
  private made = 0;

  call(name: string, id: string | undefined): string {
    const callId = id ?? `call_${++this.made}_${name.replace(/[^A-Za-z0-9_-]/g, '')}`;
    this.byName.set(name, [...(this.byName.get(name) ?? []), callId]);
    return callId;
  }

  answer(name: string, id: string | undefined): string {
    const waiting = this.byName.get(name) ?? [];
    const callId = id ?? waiting[0] ?? this.call(name, undefined);
    this.byName.set(name, (this.byName.get(name) ?? []).filter((pending) => pending !== callId));
    return callId;
  }
}

/** `{content}`, `{output}` or `{error}` holding a string is that string; any other response its JSON. */
function resultOf(response: Record<string, unknown>): { text: string; isError: boolean } {
  const keys = Object.keys(response);
  if (keys.length === 1 && typeof response[keys[0]!] === 'string') return { text: response[keys[0]!] as string, isError: keys[0] === 'error' };
  return { text: JSON.stringify(response), isError: false };
}

function partsOf(parts: GeminiPart[], calls: PendingCalls, path: string): ConversationPart[] {
  const out: ConversationPart[] = [];
  for (const [index, part] of parts.entries()) {
    const at = `${path}[${index}]`;
    if (part.executableCode || part.codeExecutionResult) throw badRequest(`${at}: a code execution part ${ONLY_GEMINI}`, at);
    if (part.functionCall) {
      const { name, args, id } = part.functionCall;
      out.push({ type: 'tool_use', id: calls.call(name, id), name, input: args ?? {} });
    } else if (part.functionResponse) {
      const { name, response, id } = part.functionResponse;
      const { text, isError } = resultOf(response);
      out.push({ type: 'tool_result', toolUseId: calls.answer(name, id), content: [{ type: 'text', text }], ...(isError ? { isError } : {}) });
    } else if (part.inlineData) {
      const source = { kind: 'base64' as const, mediaType: part.inlineData.mimeType, data: part.inlineData.data };
      out.push(part.inlineData.mimeType.startsWith('image/') ? { type: 'image', source } : { type: 'document', source });
    } else if (part.thought) {
      const previous = out.at(-1);
      // A streamed thought comes back as the parts of its events, its signature last (as this
      // door streams it): one thinking part again, which its signature covers whole.
      if (previous?.type === 'thinking' && !previous.signature) {
        previous.thinking += part.text ?? '';
        if (part.thoughtSignature) previous.signature = part.thoughtSignature;
      } else out.push({ type: 'thinking', thinking: part.text ?? '', ...(part.thoughtSignature ? { signature: part.thoughtSignature } : {}) });
    } else if (typeof part.text === 'string') {
      out.push({ type: 'text', text: part.text });
    }
  }
  return out;
}

function roleOf(role: string | undefined, at: number): ConversationMessage['role'] {
  if (role === undefined || role === 'user' || role === 'function') return 'user';
  if (role === 'model') return 'assistant';
  throw badRequest(`contents[${at}].role: must be user or model`, `contents[${at}].role`);
}

type CallingConfig = { mode?: string; allowedFunctionNames?: string[] };

function toolChoiceOf(config: CallingConfig | undefined): ConversationToolChoice | undefined {
  switch (config?.mode?.toUpperCase()) {
    case 'ANY':
      return config.allowedFunctionNames?.length === 1 ? { type: 'tool', name: config.allowedFunctionNames[0]! } : { type: 'any' };
    case 'NONE':
      return { type: 'none' };
    case 'AUTO':
    case 'VALIDATED':
      return { type: 'auto' };
    default:
      return undefined;
  }
}

const EFFORTS: Record<string, ConversationRequest['reasoningEffort']> = { minimal: 'minimal', low: 'low', medium: 'medium', high: 'high' };

function applyGenerationConfig(conversation: ConversationRequest, config: NonNullable<GeminiChatRequest['generationConfig']>): void {
  if ((config.candidateCount ?? 1) > 1) throw badRequest(`generationConfig.candidateCount: more than one candidate ${ONLY_GEMINI}`, 'generationConfig.candidateCount');
  const other = config.responseModalities?.find((modality) => modality.toUpperCase() !== 'TEXT');
  if (other) throw badRequest(`generationConfig.responseModalities: ${other} ${ONLY_GEMINI}`, 'generationConfig.responseModalities');
  if (config.maxOutputTokens !== undefined) conversation.maxOutputTokens = config.maxOutputTokens;
  if (config.stopSequences?.length) conversation.stopSequences = config.stopSequences;
  if (config.temperature !== undefined) conversation.temperature = config.temperature;
  if (config.topP !== undefined) conversation.topP = config.topP;
  if (config.topK !== undefined) conversation.topK = config.topK;
  if (config.responseMimeType === 'application/json') {
    const schema = config.responseJsonSchema ?? (config.responseSchema !== undefined ? jsonSchemaOf(config.responseSchema) : undefined);
    conversation.responseFormat = { type: 'json', ...(schema ? { schema: schema as Record<string, unknown> } : {}) };
  }
  const thinking = config.thinkingConfig;
  if (thinking) {
    const budget = thinking.thinkingBudget;
    // A budget of 0 turns thinking off; -1 (dynamic) asks for it without a bound.
    if (budget !== 0 && (thinking.includeThoughts || budget !== undefined || thinking.thinkingLevel)) conversation.thinking = budget !== undefined && budget > 0 ? { budgetTokens: budget } : {};
    const effort = thinking.thinkingLevel ? EFFORTS[thinking.thinkingLevel.toLowerCase()] : undefined;
    if (effort) conversation.reasoningEffort = effort;
  }
}

export function geminiToConversation(request: GeminiChatRequest): ConversationRequest {
  const calls = new PendingCalls();
  const system: TextPart[] = (request.systemInstruction?.parts ?? []).flatMap((part) => (part.text ? [{ type: 'text' as const, text: part.text }] : []));
  const messages: ConversationMessage[] = request.contents.map((content, at) => ({ role: roleOf(content.role, at), parts: partsOf(content.parts, calls, `contents[${at}].parts`) }));
  const conversation: ConversationRequest = { model: request.model ?? '', system, messages, stream: false };
  const declarations = (request.tools ?? []).flatMap((tool, at) => {
    if (tool.codeExecution) throw badRequest(`tools[${at}].codeExecution: code execution ${ONLY_GEMINI}`, `tools[${at}].codeExecution`);
    return tool.functionDeclarations ?? [];
  });
  if (declarations.length > 0) {
    conversation.tools = declarations.map((declaration) => ({
      name: declaration.name,
      ...(declaration.description ? { description: declaration.description } : {}),
      inputSchema: (declaration.parametersJsonSchema ?? (declaration.parameters !== undefined ? jsonSchemaOf(declaration.parameters) : { type: 'object', properties: {} })) as Record<string, unknown>,
    }));
    const choice = toolChoiceOf((request.toolConfig as { functionCallingConfig?: CallingConfig } | undefined)?.functionCallingConfig);
    if (choice) conversation.toolChoice = choice;
  }
  if (request.generationConfig) applyGenerationConfig(conversation, request.generationConfig);
  return conversation;
}
