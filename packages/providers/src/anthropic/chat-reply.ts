/**
 * A Messages API reply as a chat completion: one choice whose message joins the text blocks and
 * turns `tool_use` blocks into tool calls, the stop reason as a finish reason, and the usage with
 * every input token (cached or not) counted as prompt. What a stream needs of the same
 * (`finishReason`, `chatUsage`) is here too, so the two read Anthropic alike.
 */
import { tokenCount, upstreamFailure, type ChatRequest, type ChatResponse, type ChatResponseMessage, type ChatToolCall, type ChatUsage } from '@gateway/contracts';
import type { AnthropicUsage, ReplyBlock } from './wire.ts';
import { errorInPlaceOfReply } from './error-body.ts';
import { usesLegacyFunctions } from './chat-request.ts';

const FINISH_REASONS: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  // Anthropic's server tools paused a long turn; the client has the reply so far, as after a stop.
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** A stop reason as the finish reason a client of `request` reads; one Anthropic may add later reads as "stop". */
export function finishReason(stopReason: unknown, request: ChatRequest): string | null {
  if (typeof stopReason !== 'string') return null;
  const reason = FINISH_REASONS[stopReason] ?? 'stop';
  return reason === 'tool_calls' && usesLegacyFunctions(request) ? 'function_call' : reason;
}

const count = tokenCount;

/** Anthropic counts cache writes and reads apart from `input_tokens`; all three are the prompt. */
export function chatUsage(usage: AnthropicUsage | undefined): ChatUsage {
  const cached = count(usage?.cache_read_input_tokens);
  // Each sum at most MAX_REQUEST_TOKENS too, as every count the client is shown (tokenCount).
  const prompt = tokenCount(count(usage?.input_tokens) + count(usage?.cache_creation_input_tokens) + cached);
  const completion = count(usage?.output_tokens);
  const chat: ChatUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: tokenCount(prompt + completion) };
  // Cached tokens only where Anthropic said: a zero it never sent reads as "no cache hit". Cache
  // writes (which chat completions has no field for) as `cache_write_tokens`, OpenRouter's name.
  const details: Record<string, number> = {};
  if (typeof usage?.cache_read_input_tokens === 'number') details.cached_tokens = cached;
  if (typeof usage?.cache_creation_input_tokens === 'number') details.cache_write_tokens = count(usage.cache_creation_input_tokens);
  if (Object.keys(details).length > 0) chat.prompt_tokens_details = details;
  return chat;
}

export const chatId = (anthropicId: unknown) => `chatcmpl-${typeof anthropicId === 'string' ? anthropicId : Date.now().toString(36)}`;

export function fromAnthropicMessage(raw: unknown, request: ChatRequest): ChatResponse {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw upstreamFailure.protocol('the upstream reply is not a JSON object');
  }
  const body = raw as { type?: unknown; id?: unknown; content?: unknown; stop_reason?: unknown; usage?: AnthropicUsage };
  if (body.type === 'error') throw errorInPlaceOfReply(body);
  if (!Array.isArray(body.content)) throw upstreamFailure.protocol('the upstream reply has no content array');
  return {
    id: chatId(body.id),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [{ index: 0, message: replyMessage(body.content as ReplyBlock[], request), logprobs: null, finish_reason: finishReason(body.stop_reason, request) }],
    usage: chatUsage(body.usage),
  };
}

function replyMessage(blocks: ReplyBlock[], request: ChatRequest): ChatResponseMessage {
  const texts: string[] = [];
  const thoughts: string[] = [];
  const calls: ChatToolCall[] = [];
  for (const block of blocks) {
    if (block.type === 'text') texts.push(block.text);
    else if (block.type === 'thinking') thoughts.push(block.thinking);
    else if (block.type === 'tool_use') calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
  }
  const message: ChatResponseMessage = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null, refusal: null };
  // Thinking is shown as `reasoning_content`, the field OpenAI-style clients of reasoning models read.
  if (thoughts.length > 0) message.reasoning_content = thoughts.join('');
  if (calls.length > 0) {
    if (usesLegacyFunctions(request)) message.function_call = calls[0]!.function;
    else message.tool_calls = calls;
  }
  return message;
}
