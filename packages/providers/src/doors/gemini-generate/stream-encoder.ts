/**
 * Conversation events as Gemini's stream: each event a whole GenerateContentResponse holding the
 * parts that came since the last. Text and thoughts go as they come; function calls go whole
 * (Gemini streams no partial arguments), once their arguments are complete (at the next text or
 * the stop: a provider may interleave the arguments of parallel calls); the last event carries
 * the finishReason and usageMetadata, which is how a Gemini stream ends.
 */
import type { ConversationEvent, ConversationUsage, GeminiChatRequest, GeminiGenerateResponse, StopReason } from '@gateway/contracts';
import type { DoorStreamEncoder } from '../door.ts';
import { geminiResponse, type GeminiResponsePart } from './from-conversation.ts';

interface OpenCall { id: string; name: string; json: string }

function argsOf(call: OpenCall): Record<string, unknown> {
  try {
    const args = JSON.parse(call.json || '{}') as unknown;
    return args !== null && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
  } catch {
    // A provider cut off mid-arguments (max_tokens): the call goes with what could be read, none.
    return {};
  }
}

export function geminiEncoder(request: GeminiChatRequest): DoorStreamEncoder<GeminiGenerateResponse> {
  let id = '';
  const open = new Map<number, OpenCall>();
  let stop: StopReason | undefined;
  let usage: Partial<ConversationUsage> = {};
  let ended = false;

  const calls = (): GeminiResponsePart[] => {
    const parts = [...open.values()].map((call) => ({ functionCall: { id: call.id, name: call.name, args: argsOf(call) } }));
    open.clear();
    return parts;
  };
  const event = (parts: GeminiResponsePart[]): GeminiGenerateResponse[] => (parts.length > 0 ? [geminiResponse(request, id, parts)] : []);
  const end = (): GeminiGenerateResponse[] => {
    if (ended) return [];
    ended = true;
    const parts = calls();
    return [geminiResponse(request, id, parts.length > 0 ? parts : [{ text: '' }], { stopReason: stop ?? 'end_turn', usage })];
  };

  return {
    write(conversationEvent: ConversationEvent): GeminiGenerateResponse[] {
      if (ended) return [];
      switch (conversationEvent.type) {
        case 'start':
          id = conversationEvent.id;
          usage = { ...usage, ...conversationEvent.usage };
          return [];
        case 'text-delta':
          return conversationEvent.text ? event([...calls(), { text: conversationEvent.text }]) : [];
        case 'thinking-delta':
          return conversationEvent.thinking ? event([...calls(), { text: conversationEvent.thinking, thought: true }]) : [];
        case 'signature':
          return event([{ text: '', thought: true, thoughtSignature: conversationEvent.signature }]);
        case 'tool-call-start':
          open.set(conversationEvent.call, { id: conversationEvent.id, name: conversationEvent.name, json: '' });
          return [];
        case 'tool-args-delta': {
          const call = open.get(conversationEvent.call);
          if (call) call.json += conversationEvent.json;
          return [];
        }
        case 'stop':
          stop = conversationEvent.stopReason;
          return [];
        case 'usage':
          usage = { ...usage, ...conversationEvent.usage };
          return stop ? end() : [];
      }
    },
    finish: end,
  };
}
