/**
 * Conversation events as Anthropic's stream, in its exact order: `message_start`, then for each
 * content block `content_block_start`, its deltas (`text_delta`, `input_json_delta`,
 * `thinking_delta`, `signature_delta`) and `content_block_stop` (a `ping` after the first block
 * opens, as Anthropic sends it), then `message_delta` with the stop reason and usage, and
 * `message_stop`. A block opens when the kind of delta changes: the conversation's events carry
 * no blocks (see stream.ts).
 */
import type { ConversationEvent, ConversationUsage, MessagesRequest, MessagesStreamEvent, StopReason } from '@gateway/contracts';
import type { DoorStreamEncoder } from '../door.ts';
import { messageId, messagesUsageOf } from './from-conversation.ts';

type Open = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; call: number };

export function messagesEncoder(request: MessagesRequest): DoorStreamEncoder<MessagesStreamEvent> {
  let started = false;
  let pinged = false;
  let index = -1;
  let open: Open | undefined;
  let stop: { stopReason: StopReason; stopSequence?: string | null } | undefined;
  let usage: Partial<ConversationUsage> = {};
  let ended = false;

  const start = (id: string): MessagesStreamEvent[] => {
    if (started) return [];
    started = true;
    return [{
      type: 'message_start',
      message: { id: messageId(id), type: 'message', role: 'assistant', model: request.model, content: [], stop_reason: null, stop_sequence: null, usage: messagesUsageOf({ ...usage, outputTokens: usage.outputTokens ?? 0 }) },
    }];
  };
  const close = (): MessagesStreamEvent[] => {
    if (!open) return [];
    open = undefined;
    return [{ type: 'content_block_stop', index }];
  };
  const openBlock = (next: Open, block: Record<string, unknown>): MessagesStreamEvent[] => {
    const events = [...start(''), ...close()];
    open = next;
    index += 1;
    events.push({ type: 'content_block_start', index, content_block: block });
    if (!pinged) {
      pinged = true;
      events.push({ type: 'ping' });
    }
    return events;
  };
  const delta = (delta: Record<string, unknown>): MessagesStreamEvent => ({ type: 'content_block_delta', index, delta });
  const end = (): MessagesStreamEvent[] => {
    if (ended) return [];
    ended = true;
    return [
      ...start(''),
      ...close(),
      { type: 'message_delta', delta: { stop_reason: stop?.stopReason ?? 'end_turn', stop_sequence: stop?.stopSequence ?? null }, usage: messagesUsageOf(usage) },
      { type: 'message_stop' },
    ];
  };

  return {
    write(event: ConversationEvent): MessagesStreamEvent[] {
      if (ended) return [];
      switch (event.type) {
        case 'start':
          usage = { ...usage, ...event.usage };
          return start(event.id);
        case 'text-delta':
          if (event.text === '') return start('');
          return [...(open?.kind === 'text' ? [] : openBlock({ kind: 'text' }, { type: 'text', text: '' })), delta({ type: 'text_delta', text: event.text })];
        case 'thinking-delta':
          return [...(open?.kind === 'thinking' ? [] : openBlock({ kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' })), delta({ type: 'thinking_delta', thinking: event.thinking })];
        case 'signature':
          return open?.kind === 'thinking' ? [delta({ type: 'signature_delta', signature: event.signature })] : [];
        case 'tool-call-start':
          return openBlock({ kind: 'tool', call: event.call }, { type: 'tool_use', id: event.id, name: event.name, input: {} });
        case 'tool-args-delta':
          // Arguments of a call other than the open one (interleaved calls) cannot be written in Anthropic's order: the open one's only.
          if (open?.kind !== 'tool' || open.call !== event.call || event.json === '') return [];
          return [delta({ type: 'input_json_delta', partial_json: event.json })];
        case 'stop':
          stop = { stopReason: event.stopReason, stopSequence: event.stopSequence };
          return close();
        case 'usage':
          usage = { ...usage, ...event.usage };
          return stop ? end() : [];
      }
    },
    finish: end,
  };
}
