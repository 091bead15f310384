/**
 * Chat completions against Anthropic's Messages API (`POST /v1/messages`), whole or streamed:
 * the request in `chat-request.ts` and `chat-messages.ts`, the reply in `chat-reply.ts`, the
 * stream in `chat-stream.ts`.
 *
 * How each OpenAI request field reaches Anthropic. A field Anthropic has no counterpart for is
 * left out where the reply is still what the client asked for, and refused with a 400 naming it
 * where the reply would silently lack something the client asked for.
 *
 * | OpenAI                                  | Anthropic                                                        |
 * |-----------------------------------------|------------------------------------------------------------------|
 * | model                                   | the channel's model; the reply carries the client's name         |
 * | messages: system, developer             | `system` text blocks, in order, wherever they stood              |
 * | messages: user, assistant               | turns of content blocks; same-role neighbours joined into one    |
 * | messages: tool, function                | `tool_result` blocks in a user turn                              |
 * | assistant tool_calls, function_call     | `tool_use` blocks; arguments that are no JSON object become `{}` |
 * | content: text, refusal                  | text blocks (empty text left out: Anthropic refuses it)          |
 * | content: image_url                      | image block: base64 for a data: URL, else a `url` source         |
 * | content: file (a PDF as file_data)      | document block; a file_id or another file type: 400              |
 * | content: input_audio, other part types  | 400                                                              |
 * | max_completion_tokens, max_tokens       | `max_tokens` (required by Anthropic; 4096 when neither is set)   |
 * | temperature                             | `temperature`, clamped to Anthropic's 0..1                       |
 * | top_p                                   | `top_p`, only without temperature (recent models refuse both)    |
 * | stop                                    | `stop_sequences`, whitespace-only ones left out (refused there)  |
 * | user                                    | `metadata.user_id`                                               |
 * | tools, functions                        | `tools` {name, description, input_schema}; `strict` left out     |
 * | tool_choice, function_call              | none / auto / any (required) / tool (named); others: 400         |
 * | parallel_tool_calls: false; functions   | `disable_parallel_tool_use: true`                                |
 * | response_format json_object/json_schema | an instruction (with the schema) appended to `system`            |
 * | stream                                  | `stream`; usage always ends the stream (the gateway charges it)  |
 * | stream_options                          | left out: the usage chunk always comes                           |
 * | n > 1                                   | 400: Anthropic gives one reply                                   |
 * | modalities with audio, audio            | 400: Anthropic answers in text only                              |
 * | logprobs, top_logprobs                  | left out; the choice's `logprobs` is null                        |
 * | seed, presence_penalty,                 | left out: sampling hints with no counterpart (logit_bias names   |
 * |   frequency_penalty, logit_bias         |   OpenAI token ids, which mean nothing to Claude)                |
 * | reasoning_effort                        | left out: the model thinks as it does by default                 |
 * | prediction, service_tier, store,        | left out: OpenAI-side features that do not change the reply      |
 * |   metadata, message `name`, image       |                                                                  |
 * |   `detail`, fields the schema does not  |                                                                  |
 * |   know                                  |                                                                  |
 *
 * Back: text blocks joined as the content, `tool_use` blocks as tool calls (or as the legacy
 * `function_call` when the request used `functions`), thinking as `reasoning_content`, the stop
 * reason as the finish reason, and every input token (cache writes and reads included) as prompt.
 */
import type { ChatChunk, ChatRequest, ChatResponse } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';
import { toAnthropicRequest } from './chat-request.ts';
import { fromAnthropicMessage } from './chat-reply.ts';
import { fromAnthropicEvent, isMessageStop } from './chat-stream.ts';

/** A stream is complete at `message_stop`; one that stops before is reported as broken. */
export const chat: OperationMapping<ChatRequest, ChatResponse, ChatChunk> = {
  toUpstream: toAnthropicRequest,
  fromReply: fromAnthropicMessage,
  fromEvent: fromAnthropicEvent,
  streamEnd: { name: 'message_stop', isMarker: isMessageStop },
};
