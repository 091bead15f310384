/**
 * The provider registry: for each channel type, the operations its provider offers. A model job
 * names its operation; the worker resolves it for the channel the router chose, so a route may
 * be served by channels of several types, and failover may cross them. Adding a provider is a
 * folder and a line here; adding an operation to one, a file and a line.
 */
import { upstreamFailure, type Channel, type ChannelType, type CountTokensRequest, type MessagesRequest, type MessagesResponse, type MessagesStreamEvent, type ResponsesRequest, type ResponsesResponse, type ResponsesStreamEvent, type ChatChunk, type ChatRequest, type ChatResponse, type CompletionChunk, type CompletionRequest, type CompletionResponse, type EmbeddingRequest, type EmbeddingResponse, type GeminiBatchEmbedRequest, type GeminiChatRequest, type GeminiContentRequest, type GeminiEmbedReply, type GeminiGenerateResponse, type ModelOperation, type SpeechRequest } from '@gateway/contracts';
import { anthropic } from './anthropic/index.ts';
import { azure } from './azure/index.ts';
import { bedrock } from './bedrock/index.ts';
import { gemini } from './gemini/index.ts';
import { openai } from './openai/index.ts';
import { vertex } from './vertex/index.ts';
import type { ProviderApi, ProviderOperation } from './provider.ts';

/** Each operation's request, reply and stream event, as the client's wire format has them. */
export interface OperationShapes {
  completions: ProviderOperation<CompletionRequest, CompletionResponse, CompletionChunk>;
  chat: ProviderOperation<ChatRequest, ChatResponse, ChatChunk>;
  embeddings: ProviderOperation<EmbeddingRequest, EmbeddingResponse, never>;
  /** Gemini's own generateContent for speech, passed through to a provider of that format. */
  generateContent: ProviderOperation<GeminiContentRequest, GeminiGenerateResponse, GeminiGenerateResponse>;
  /** Gemini's door for a chat model: passed through on a gemini channel, through the conversation model elsewhere. */
  geminiChat: ProviderOperation<GeminiChatRequest, GeminiGenerateResponse, GeminiGenerateResponse>;
  /** Gemini's own embedding request (as a batch): passed through, or translated to OpenAI's embeddings. */
  embedContent: ProviderOperation<GeminiBatchEmbedRequest, GeminiEmbedReply, never>;
  /**
   * OpenAI's text-to-speech: audio bytes in the asked format from a provider that speaks it
   * (`replies: 'audio'`), or Gemini's PCM events for the worker to encode.
   */
  speech: ProviderOperation<SpeechRequest, GeminiGenerateResponse, GeminiGenerateResponse> | ProviderOperation<SpeechRequest, never, never>;
  /** Anthropic's Messages door: passed through on an anthropic channel, through the conversation model elsewhere. */
  messages: ProviderOperation<MessagesRequest, MessagesResponse, MessagesStreamEvent>;
  /** Anthropic's count_tokens, on an anthropic channel and a vertex channel's Claude models (`tokenCounterFor`; the worker estimates it on others). */
  countTokens: ProviderOperation<CountTokensRequest, { input_tokens: number }, never>;
  /** OpenAI's Responses door: through the conversation model on every channel type that has a mapping for it, passed through where `ownFormat` says. */
  responses: ProviderOperation<ResponsesRequest, ResponsesResponse, ResponsesStreamEvent>;
}

const registry: Record<ChannelType, Partial<OperationShapes>> = {
  openai: { completions: openai.completions, chat: openai.chat, embeddings: openai.embeddings, embedContent: openai.embedContent, speech: openai.speech, messages: openai.messages, responses: openai.responses, geminiChat: openai.geminiChat },
  anthropic: { chat: anthropic.chat, messages: anthropic.messages, countTokens: anthropic.countTokens, responses: anthropic.responses, geminiChat: anthropic.geminiChat },
  azure: { completions: azure.completions, chat: azure.chat, embeddings: azure.embeddings, embedContent: azure.embedContent, speech: azure.speech, messages: azure.messages, responses: azure.responses, geminiChat: azure.geminiChat },
  bedrock: { chat: bedrock.chat, embeddings: bedrock.embeddings, messages: bedrock.messages, responses: bedrock.responses, geminiChat: bedrock.geminiChat },
  vertex: { chat: vertex.chat, messages: vertex.messages, responses: vertex.responses, geminiChat: vertex.geminiChat, generateContent: vertex.generateContent, speech: vertex.speech, embeddings: vertex.embeddings, embedContent: vertex.embedContent, countTokens: vertex.countTokens },
  gemini: { chat: gemini.chat, generateContent: gemini.generateContent, geminiChat: gemini.geminiChat, embeddings: gemini.embeddings, embedContent: gemini.embedContent, speech: gemini.speech, messages: gemini.messages, responses: gemini.responses },
};

/**
 * Operations a channel serves in its door's own format when its upstream says it does (an
 * `openai` channel's `responses_api`): passed through untranslated, in place of the registry's.
 */
const ownFormat: Partial<Record<ChannelType, Partial<OperationShapes>>> = {
  openai: { responses: openai.responsesNative },
};

/** Whether the channel takes the operation in the client's own format, untranslated. */
export function passesThrough(operation: ModelOperation, channel: Pick<Channel, 'type' | 'responses_api'>): boolean {
  return operation === 'responses' && channel.responses_api === true && ownFormat[channel.type]?.responses !== undefined;
}

/** How to call the operation on this channel: in the client's own format where it passes through, else as its type's provider offers it. */
export function operationOn<O extends ModelOperation>(operation: O, channel: Pick<Channel, 'type' | 'responses_api'>): OperationShapes[O] {
  if (passesThrough(operation, channel)) return ownFormat[channel.type]![operation] as OperationShapes[O];
  return operationFor(operation, channel.type);
}

/** The channel types whose provider offers the operation: the channels a request of it may use. */
export function channelTypesFor(operation: ModelOperation): ChannelType[] {
  return (Object.keys(registry) as ChannelType[]).filter((type) => registry[type][operation] !== undefined);
}

/** How to call the operation on a channel of this type. */
export function operationFor<O extends ModelOperation>(operation: O, type: ChannelType): OperationShapes[O] {
  const found = registry[type]?.[operation];
  // Routing only chooses channels of `channelTypesFor(operation)`: this is a channel whose type
  // changed under a request, a failure of that channel alone.
  if (!found) throw upstreamFailure.protocol(`a ${type} channel does not serve ${operation}`);
  return found as OperationShapes[O];
}

/** How this channel's provider counts a count_tokens request's tokens for the model; undefined where it does not (the worker estimates). */
export function tokenCounterFor(type: ChannelType, upstreamModel: string): OperationShapes['countTokens'] | undefined {
  const counter = registry[type]?.countTokens;
  return counter && (counter.servesModel?.(upstreamModel) ?? true) ? counter : undefined;
}

/**
 * What is wrong with a key for a channel of this type, as its provider reads it (fields, never
 * values), or undefined: the problem of the first of its provider's APIs that finds one (a
 * provider with two, Vertex AI's two publishers, checks with both).
 */
export function channelKeyProblem(type: ChannelType, key: string): string | undefined {
  const operations = [...Object.values(registry[type]), ...Object.values(ownFormat[type] ?? {})] as { api: ProviderApi }[];
  for (const api of new Set(operations.map((o) => o.api))) {
    const problem = api.checkCredential?.(key);
    if (problem !== undefined) return problem;
  }
  return undefined;
}
