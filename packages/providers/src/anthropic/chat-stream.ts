/**
 * Anthropic's stream events as chat completion chunks. Anthropic's events only make sense
 * together: a delta names its content block by index, a tool call's index among the calls is not
 * its block's, and the usage comes in two parts (input in `message_start`, output in
 * `message_delta`). So the mapping keeps one state a stream, and one event may give no chunk (a
 * ping) or two (the finish reason, then the usage).
 */
import { upstreamFailure, type ChatChunk, type ChatChunkChoice, type ChatRequest } from '@gateway/contracts';
import type { AnthropicUsage } from './wire.ts';
import { errorInPlaceOfReply } from './error-body.ts';
import { usesLegacyFunctions } from './chat-request.ts';
import { chatId, chatUsage, finishReason } from './chat-reply.ts';

interface StreamState {
  id: string;
  created: number;
  /** The input counts of `message_start`, for the usage chunk at the end. */
  usage: AnthropicUsage;
  /** Each tool_use block (by block index): its tool call's own index, and whether any arguments went out. */
  toolCalls: Map<number, { index: number; argued: boolean }>;
}

interface AnthropicEvent {
  type: string;
  index?: number;
  message?: { id?: unknown; usage?: AnthropicUsage };
  content_block?: { type?: string; text?: string; id?: string; name?: string };
  delta?: { type?: string; text?: string; thinking?: string; partial_json?: string; stop_reason?: unknown };
  usage?: AnthropicUsage;
}

type Delta = ChatChunkChoice['delta'];

/** Whether an event's data is `message_stop`, which completes the stream; the cheap test first, then the parse to be sure. */
export function isMessageStop(data: string): boolean {
  if (!data.includes('"message_stop"')) return false;
  try {
    return (JSON.parse(data) as { type?: unknown }).type === 'message_stop';
  } catch {
    return false;
  }
}

export function fromAnthropicEvent(raw: unknown, request: ChatRequest, state: Record<string, unknown>): ChatChunk | ChatChunk[] | undefined {
  const event = raw as AnthropicEvent;
  if (typeof event !== 'object' || event === null || typeof event.type !== 'string') {
    throw upstreamFailure.protocol('the upstream sent a stream event without a type');
  }
  if (event.type === 'ping') return undefined;
  if (event.type === 'error') throw errorInPlaceOfReply(event);
  if (event.type === 'message_start') {
    const stream: StreamState = { id: chatId(event.message?.id), created: Math.floor(Date.now() / 1000), usage: event.message?.usage ?? {}, toolCalls: new Map() };
    state.stream = stream;
    return chunk(stream, request, { role: 'assistant', content: '' });
  }
  const stream = state.stream as StreamState | undefined;
  if (!stream) throw upstreamFailure.protocol(`the upstream stream sent ${event.type} before message_start`);
  switch (event.type) {
    case 'content_block_start':
      return blockStart(stream, request, event);
    case 'content_block_delta':
      return blockDelta(stream, request, event);
    case 'content_block_stop':
      return blockStop(stream, request, event);
    case 'message_delta':
      return messageEnd(stream, request, event);
    default:
      // message_stop (read as the stream's end before it gets here), and event types Anthropic may add.
      return undefined;
  }
}

function chunk(stream: StreamState, request: ChatRequest, delta: Delta, finish: string | null = null): ChatChunk {
  return {
    id: stream.id,
    object: 'chat.completion.chunk',
    created: stream.created,
    model: request.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

/** A piece of a tool call's arguments, as a client of `request` reads it. */
function argumentsDelta(request: ChatRequest, index: number, text: string): Delta {
  return usesLegacyFunctions(request) ? { function_call: { arguments: text } } : { tool_calls: [{ index, function: { arguments: text } }] };
}

function blockStart(stream: StreamState, request: ChatRequest, event: AnthropicEvent): ChatChunk | undefined {
  const block = event.content_block;
  if (block?.type === 'text') return block.text ? chunk(stream, request, { content: block.text }) : undefined;
  if (block?.type !== 'tool_use') return undefined;
  const index = stream.toolCalls.size;
  stream.toolCalls.set(event.index ?? -1, { index, argued: false });
  const name = block.name ?? '';
  if (usesLegacyFunctions(request)) return chunk(stream, request, { function_call: { name, arguments: '' } });
  return chunk(stream, request, { tool_calls: [{ index, id: block.id ?? '', type: 'function', function: { name, arguments: '' } }] });
}

function blockDelta(stream: StreamState, request: ChatRequest, event: AnthropicEvent): ChatChunk | undefined {
  const delta = event.delta;
  switch (delta?.type) {
    case 'text_delta':
      return chunk(stream, request, { content: delta.text ?? '' });
    // Thinking goes out as `reasoning_content`, as in a whole reply; its signature has no OpenAI counterpart.
    case 'thinking_delta':
      return chunk(stream, request, { reasoning_content: delta.thinking ?? '' });
    case 'input_json_delta': {
      // A block that is no tool_use (a server tool's) streams its input too: it is not the client's.
      const call = stream.toolCalls.get(event.index ?? -1);
      if (!call || !delta.partial_json) return undefined;
      call.argued = true;
      return chunk(stream, request, argumentsDelta(request, call.index, delta.partial_json));
    }
    default:
      return undefined;
  }
}

/** A tool call that took no input streams none: its arguments are `{}`, as in a whole reply, not an empty string no client can parse. */
function blockStop(stream: StreamState, request: ChatRequest, event: AnthropicEvent): ChatChunk | undefined {
  const call = stream.toolCalls.get(event.index ?? -1);
  if (!call || call.argued) return undefined;
  call.argued = true;
  return chunk(stream, request, argumentsDelta(request, call.index, '{}'));
}

/**
 * The finish reason, then the usage on a chunk of its own, as OpenAI ends a stream that
 * includes usage. `message_delta`'s input counts, where it gives them, are cumulative totals
 * and replace `message_start`'s.
 */
function messageEnd(stream: StreamState, request: ChatRequest, event: AnthropicEvent): ChatChunk[] {
  const final = event.usage ?? {};
  const usage: AnthropicUsage = {
    input_tokens: final.input_tokens ?? stream.usage.input_tokens,
    cache_creation_input_tokens: final.cache_creation_input_tokens ?? stream.usage.cache_creation_input_tokens,
    cache_read_input_tokens: final.cache_read_input_tokens ?? stream.usage.cache_read_input_tokens,
    output_tokens: final.output_tokens,
  };
  const finish = chunk(stream, request, {}, finishReason(event.delta?.stop_reason, request) ?? 'stop');
  return [finish, { id: stream.id, object: 'chat.completion.chunk', created: stream.created, model: request.model, choices: [], usage: chatUsage(usage) }];
}
