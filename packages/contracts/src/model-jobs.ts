/**
 * What the ingress hands a model worker besides the request itself: who is calling, resolved
 * from the API key, so the worker can route by group and charge usage without re-authenticating.
 */
import type { GeminiBatchEmbedRequest, GeminiChatRequest } from './wire/gemini-content.ts';
import type { GeminiGenerateRequest } from './wire/gemini-generate.ts';
import type { ChatRequest } from './wire/openai-chat.ts';
import type { CompletionRequest } from './wire/openai-completion.ts';
import type { EmbeddingRequest } from './wire/openai-embeddings.ts';
import type { SpeechRequest } from './wire/openai-speech.ts';
import type { CountTokensRequest, MessagesRequest } from './wire/anthropic-messages.ts';
import type { ResponsesRequest } from './wire/openai-responses.ts';

export interface ModelCaller {
  tokenId: number;
  /** The key's name when the request came, for the request log. */
  tokenName?: string;
  userId: number;
  /** The user's group; a channel serves the caller only if its `group` list includes it. */
  group: string;
  /**
   * The request's hold on its key's and user's quota and in-flight slots, made by the gateway
   * (`QuotaHolds`); the worker gives it back once the request's charge is written.
   */
  hold?: string;
  /**
   * The conversation the request is a turn of (`conversationOf` in @gateway/routing), set by the
   * door: its turns go to the channel that served the last one while it may.
   */
  conversation?: Conversation;
}

/** A request's conversation, as the router keeps its turns on one channel. */
export interface Conversation {
  /** A hash naming it: never the session id or the messages themselves. */
  key: string;
  /**
   * The request holds the conversation's opening and nothing more (a chat with no answer in it
   * yet): a first turn, or a one-off request, so its channel is remembered only as long as a
   * provider keeps a prompt cache, not the hour a conversation's is.
   */
  opening?: boolean;
}

/**
 * What a model job asks of its upstream. Each is resolved per chosen channel, by the channel's
 * type, to the provider's mapping (the registry in @gateway/providers), so one route may be
 * served by channels of several types.
 */
export type ModelOperation = 'completions' | 'chat' | 'embeddings' | 'generateContent' | 'geminiChat' | 'embedContent' | 'speech' | 'messages' | 'countTokens' | 'responses';

/** Gemini's two embedding methods: one content, or a batch of them (what `@google/genai` calls). */
export type EmbedMethod = 'embedContent' | 'batchEmbedContents';

/**
 * The client's headers a door hands on to a provider of its own format, by lower-case name
 * (Anthropic's `anthropic-version` and `anthropic-beta`, byte for byte); other providers ignore them.
 */
export type ClientHeaders = Record<string, string>;

/**
 * Payload of a job on the completion queue: one of the text operations it serves, each with its
 * door's request as it came (OpenAI's, or Gemini's with the model and method of its path). A
 * payload without `operation` is a legacy completion (queued by a gateway, or a batch line, of
 * before).
 */
export type CompletionJobPayload =
  | { caller: ModelCaller; operation?: 'completions'; request: CompletionRequest }
  | { caller: ModelCaller; operation: 'chat'; request: ChatRequest }
  | { caller: ModelCaller; operation: 'embeddings'; request: EmbeddingRequest }
  /**
   * Gemini's door for a chat model: its own operation, as speech keeps `generateContent` (served by
   * gemini channels alone), so a speech job never reaches a channel this one may use.
   * `generateContent` here: queued by a gateway of before.
   */
  | { caller: ModelCaller; operation: 'geminiChat' | 'generateContent'; model: string; method: AudioMethod; request: GeminiChatRequest }
  | { caller: ModelCaller; operation: 'embedContent'; model: string; method: EmbedMethod; request: GeminiBatchEmbedRequest }
  | { caller: ModelCaller; operation: 'messages'; request: MessagesRequest; clientHeaders?: ClientHeaders }
  | { caller: ModelCaller; operation: 'countTokens'; request: CountTokensRequest; clientHeaders?: ClientHeaders }
  /** OpenAI's Responses door; its input already holds a `previous_response_id`'s conversation (the gateway rebuilt it). */
  | { caller: ModelCaller; operation: 'responses'; request: ResponsesRequest };

/** The two Gemini methods the audio queue serves: one whole reply, or a stream of replies. */
export type AudioMethod = 'generateContent' | 'streamGenerateContent';

/**
 * Payload of a job on the audio queue: Gemini's own speech route (its method and the model named
 * in its path, which is the one that counts), or OpenAI's text-to-speech.
 */
export type AudioJobPayload =
  | { caller: ModelCaller; operation?: 'generateContent'; model: string; method: AudioMethod; request: GeminiGenerateRequest }
  | { caller: ModelCaller; operation: 'speech'; request: SpeechRequest };

/** What a completion or audio job returns when the answer was streamed as chunks. */
export interface StreamEnd {
  done: true;
}

/** What a speech job returns after its audio: the usage, which `stream_format: "sse"` ends with. */
export interface SpeechEnd extends StreamEnd {
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
}
