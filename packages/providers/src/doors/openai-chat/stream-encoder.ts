/**
 * Conversation events as chat completion chunks: the role first, then content,
 * `reasoning_content` and tool-call deltas (each call by its index), a chunk with the finish
 * reason, and the usage chunk (no choices) OpenAI ends with when asked; the worker hands that one
 * on only to a client that asked (`stream_options.include_usage`). Usage the provider never
 * reported gives no usage chunk, so the worker estimates it rather than charge 0.
 */
import type { ChatChunk, ChatChunkChoice, ChatRequest, ConversationEvent, ConversationUsage, StopReason } from '@gateway/contracts';
import type { DoorStreamEncoder } from '../door.ts';
import { chatUsageOf, completionId, chatFinishReasonOf } from './from-conversation.ts';

export function chatEncoder(request: ChatRequest): DoorStreamEncoder<ChatChunk> {
  let id = completionId('');
  const created = Math.floor(Date.now() / 1000);
  let started = false;
  let stop: StopReason | undefined;
  let stopped = false;
  let usage: Partial<ConversationUsage> = {};
  let ended = false;

  const chunk = (choices: ChatChunkChoice[], extra: Partial<ChatChunk> = {}): ChatChunk => ({ id, object: 'chat.completion.chunk', created, model: request.model, choices, ...extra });
  const delta = (fields: ChatChunkChoice['delta']): ChatChunk[] => {
    const first = started ? [] : [chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])];
    started = true;
    return [...first, chunk([{ index: 0, delta: fields, finish_reason: null }])];
  };
  const stopChunk = (): ChatChunk[] => {
    if (stopped) return [];
    stopped = true;
    return [chunk([{ index: 0, delta: {}, finish_reason: chatFinishReasonOf(stop ?? 'end_turn') }])];
  };
  const end = (): ChatChunk[] => {
    if (ended) return [];
    ended = true;
    const reported = (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) > 0;
    return [...stopChunk(), ...(reported ? [chunk([], { usage: chatUsageOf(usage) })] : [])];
  };

  return {
    write(event: ConversationEvent): ChatChunk[] {
      if (ended) return [];
      switch (event.type) {
        case 'start':
          if (event.id) id = completionId(event.id);
          usage = { ...usage, ...event.usage };
          return [];
        case 'text-delta':
          return event.text ? delta({ content: event.text }) : [];
        case 'thinking-delta':
          return event.thinking ? delta({ reasoning_content: event.thinking }) : [];
        case 'signature':
          return [];
        case 'tool-call-start':
          return delta({ tool_calls: [{ index: event.call, id: event.id, type: 'function', function: { name: event.name, arguments: '' } }] });
        case 'tool-args-delta':
          return event.json ? delta({ tool_calls: [{ index: event.call, function: { arguments: event.json } }] }) : [];
        case 'stop':
          stop = event.stopReason;
          return stopChunk();
        case 'usage':
          usage = { ...usage, ...event.usage };
          return stopped ? end() : [];
      }
    },
    finish: end,
  };
}
