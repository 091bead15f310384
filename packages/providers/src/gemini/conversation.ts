/**
 * The conversation model (see doors/door.ts) on a Gemini upstream, as `generateContent`: system
 * parts become `systemInstruction`, turns `contents` (the assistant's as role `model`), tool uses
 * `functionCall` parts and tool results `functionResponse` parts (named by the call they answer),
 * images and documents `inlineData` (by URL refused: see `mediaPart`); the reply's thought parts become thinking
 * parts, its function calls tool uses, and `cachedContentTokenCount` the cache reads.
 *
 * Dropped by this rule, never sent to fail: cache marks (Gemini caches by itself), thinking and
 * redacted-thinking parts of earlier turns (their signatures are another provider's).
 */
import { badRequest, upstreamFailure, type ConversationEvent, type ConversationPart, type ConversationReply, type ConversationRequest, type ConversationUsage, type StopReason } from '@gateway/contracts';
import type { ProviderConversation } from '../doors/door.ts';

type GeminiPart = Record<string, unknown>;

/**
 * Media inline only. A URL would go as `fileData`, which may name a file of the channel's
 * project, which every tenant of the channel shares (the speech door refuses it for that reason):
 * refused, naming the block.
 */
function mediaPart(part: Extract<ConversationPart, { type: 'image' | 'document' }>, path: string): GeminiPart {
  const { source } = part;
  if (source.kind === 'url') throw badRequest(`${path}: a media source by URL cannot go to a gemini channel; send it inline as base64`, path);
  if (source.kind === 'text') return { text: source.data };
  return { inlineData: { mimeType: source.mediaType, data: source.data } };
}

function geminiParts(parts: ConversationPart[], callNames: Map<string, string>, at: number): GeminiPart[] {
  const out: GeminiPart[] = [];
  for (const [index, part] of parts.entries()) {
    switch (part.type) {
      case 'text':
        if (part.text) out.push({ text: part.text });
        break;
      case 'image':
      case 'document':
        out.push(mediaPart(part, `messages[${at}].content[${index}]`));
        break;
      case 'tool_use':
        callNames.set(part.id, part.name);
        out.push({ functionCall: { name: part.name, args: part.input } });
        break;
      case 'tool_result': {
        const text = part.content.map((inner) => (inner.type === 'text' ? inner.text : '')).join('');
        const response = part.isError ? { error: text } : { content: text };
        out.push({ functionResponse: { name: callNames.get(part.toolUseId) ?? part.toolUseId, response } });
        break;
      }
    }
  }
  return out;
}

const MODES = { auto: 'AUTO', any: 'ANY', none: 'NONE', tool: 'ANY' } as const;

function toGenerate(request: ConversationRequest): Record<string, unknown> {
  const callNames = new Map<string, string>();
  const contents: Record<string, unknown>[] = [];
  const system = request.system.map((part) => ({ text: part.text }));
  for (const [at, message] of request.messages.entries()) {
    // A system turn mid-conversation has no place in `contents`: it joins the system instruction.
    if (message.role === 'system') {
      for (const part of message.parts) if (part.type === 'text') system.push({ text: part.text });
      continue;
    }
    const parts = geminiParts(message.parts, callNames, at);
    if (parts.length > 0) contents.push({ role: message.role === 'assistant' ? 'model' : 'user', parts });
  }
  const body: Record<string, unknown> = { contents };
  if (system.length > 0) body.systemInstruction = { parts: system };
  if (request.tools?.length) {
    body.tools = [{ functionDeclarations: request.tools.map((tool) => ({ name: tool.name, ...(tool.description ? { description: tool.description } : {}), parameters: tool.inputSchema })) }];
    const choice = request.toolChoice;
    if (choice) {
      body.toolConfig = { functionCallingConfig: { mode: MODES[choice.type], ...(choice.type === 'tool' ? { allowedFunctionNames: [choice.name] } : {}) } };
    }
  }
  const config: Record<string, unknown> = {};
  if (request.maxOutputTokens !== undefined) config.maxOutputTokens = request.maxOutputTokens;
  if (request.stopSequences?.length) config.stopSequences = request.stopSequences.slice(0, 5);
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.topP !== undefined) config.topP = request.topP;
  if (request.topK !== undefined) config.topK = request.topK;
  if (request.thinking) config.thinkingConfig = { includeThoughts: true, ...(request.thinking.budgetTokens !== undefined ? { thinkingBudget: request.thinking.budgetTokens } : {}) };
  if (request.responseFormat?.type === 'json') {
    config.responseMimeType = 'application/json';
    if (request.responseFormat.schema) config.responseJsonSchema = request.responseFormat.schema;
  }
  if (Object.keys(config).length > 0) body.generationConfig = config;
  return body;
}

const STOP_REASONS: Record<string, StopReason> = { STOP: 'end_turn', MAX_TOKENS: 'max_tokens', SAFETY: 'refusal', RECITATION: 'refusal', PROHIBITED_CONTENT: 'refusal', BLOCKLIST: 'refusal', SPII: 'refusal' };

type Usage = { promptTokenCount?: number; candidatesTokenCount?: number; cachedContentTokenCount?: number; thoughtsTokenCount?: number };

/** Gemini's prompt counts its cached tokens, and its thoughts are outside `candidatesTokenCount`. */
function usageOf(usage: Usage | undefined): ConversationUsage {
  const cached = usage?.cachedContentTokenCount;
  const thoughts = usage?.thoughtsTokenCount;
  return {
    inputTokens: Math.max(0, (usage?.promptTokenCount ?? 0) - (cached ?? 0)),
    outputTokens: (usage?.candidatesTokenCount ?? 0) + (thoughts ?? 0),
    ...(typeof cached === 'number' ? { cacheReadTokens: cached } : {}),
    ...(typeof thoughts === 'number' ? { reasoningTokens: thoughts } : {}),
  };
}

type Candidate = { content?: { parts?: { text?: string; thought?: boolean; functionCall?: { name: string; args?: Record<string, unknown> } }[] }; finishReason?: string };

function bodyOf(raw: unknown): { candidates?: Candidate[]; usageMetadata?: Usage; responseId?: string } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw upstreamFailure.protocol('the upstream reply is not a JSON object');
  const body = raw as Record<string, unknown>;
  if (body.error && !body.candidates) {
    const error = body.error as { code?: unknown; message?: unknown };
    throw upstreamFailure.http(typeof error.code === 'number' && error.code >= 400 ? error.code : 502, `upstream error: ${typeof error.message === 'string' ? error.message : 'unknown'}`, { body });
  }
  return body as ReturnType<typeof bodyOf>;
}

const callId = (responseId: string | undefined, at: number) => `toolu_${(responseId ?? 'gemini').replace(/[^A-Za-z0-9_-]/g, '')}_${at}`;

function fromGenerateReply(raw: unknown): ConversationReply {
  const body = bodyOf(raw);
  const candidate = body.candidates?.[0];
  if (!candidate) throw upstreamFailure.protocol('the upstream reply has no candidates');
  const parts: ConversationPart[] = [];
  let calls = 0;
  for (const part of candidate.content?.parts ?? []) {
    if (part.functionCall) parts.push({ type: 'tool_use', id: callId(body.responseId, calls++), name: part.functionCall.name, input: part.functionCall.args ?? {} });
    else if (typeof part.text === 'string' && part.thought) parts.push({ type: 'thinking', thinking: part.text });
    else if (typeof part.text === 'string' && part.text) parts.push({ type: 'text', text: part.text });
  }
  const stopReason = calls > 0 ? 'tool_use' : STOP_REASONS[candidate.finishReason ?? 'STOP'] ?? 'end_turn';
  return { id: body.responseId ?? '', parts, stopReason, usage: usageOf(body.usageMetadata) };
}

function fromGenerateEvent(raw: unknown, state: Record<string, unknown>): ConversationEvent[] {
  const body = bodyOf(raw);
  const events: ConversationEvent[] = [];
  if (!state.started) {
    state.started = true;
    events.push({ type: 'start', id: body.responseId ?? '' });
  }
  const candidate = body.candidates?.[0];
  for (const part of candidate?.content?.parts ?? []) {
    if (part.functionCall) {
      const call = (state.calls = ((state.calls as number | undefined) ?? 0) + 1) - 1;
      events.push({ type: 'tool-call-start', call, id: callId(body.responseId, call), name: part.functionCall.name });
      events.push({ type: 'tool-args-delta', call, json: JSON.stringify(part.functionCall.args ?? {}) });
    } else if (typeof part.text === 'string' && part.text) {
      events.push(part.thought ? { type: 'thinking-delta', thinking: part.text } : { type: 'text-delta', text: part.text });
    }
  }
  // Gemini's last event carries the finish reason, with the usage: the stream ends there.
  if (candidate?.finishReason) {
    const stopReason = state.calls ? 'tool_use' : STOP_REASONS[candidate.finishReason] ?? 'end_turn';
    events.push({ type: 'stop', stopReason }, { type: 'usage', usage: usageOf(body.usageMetadata) });
  }
  return events;
}

export const generateConversation: ProviderConversation = {
  toUpstream: (request) => toGenerate(request),
  fromReply: fromGenerateReply,
  fromEvent: fromGenerateEvent,
  streamEnd: { name: 'its finishReason' },
};
