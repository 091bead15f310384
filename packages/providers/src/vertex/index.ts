/**
 * Google Vertex AI: Google's Gemini models and Anthropic's Claude models in a project's region,
 * with OAuth access tokens from the channel's service account (`credential.ts`,
 * `access-tokens.ts`, `api.ts`). The upstream model's name chooses the publisher (`claude-*`:
 * Anthropic's; `forModel`): Gemini's mappings (`gemini/`) for chat through every door, its own
 * generateContent and speech, and `:predict` for embeddings through OpenAI's door and Gemini's
 * (`embeddings.ts`); Anthropic's
 * (`anthropic/`) for chat through every door, Messages passed through, in Vertex's body
 * (`anthropic-body.ts`), and count_tokens at Vertex's count-tokens endpoint (Anthropic's models
 * alone: a Gemini model's count is the worker's estimate).
 */
import { chat as anthropicChat } from '../anthropic/chat.ts';
import { messagesConversation } from '../anthropic/conversation.ts';
import { messages as anthropicMessages } from '../anthropic/messages.ts';
import { throughConversation } from '../doors/door.ts';
import { geminiDoor } from '../doors/gemini-generate/index.ts';
import { messagesDoor } from '../doors/anthropic-messages/index.ts';
import { chatDoor } from '../doors/openai-chat/index.ts';
import { responsesDoor } from '../doors/openai-responses/index.ts';
import { generateConversation } from '../gemini/conversation.ts';
import { generateContent } from '../gemini/generate.ts';
import { speech } from '../gemini/speech.ts';
import type { OperationMapping, ProviderOperation } from '../provider.ts';
import { countTokensOnVertex, onVertex } from './anthropic-body.ts';
import { isAnthropicModel, vertexAnthropicApi, vertexGoogleApi } from './api.ts';
import { embedContent, embeddings } from './embeddings.ts';

const google = <Q, R, E>(mapping: OperationMapping<Q, R, E>): ProviderOperation<Q, R, E> =>
  ({ api: vertexGoogleApi, endpoint: vertexGoogleApi.endpoints.generateContent, mapping });

const anthropic = <Q, R, E>(mapping: OperationMapping<Q, R, E>): ProviderOperation<Q, R, E> =>
  ({ api: vertexAnthropicApi, endpoint: vertexAnthropicApi.endpoints.rawPredict, mapping: onVertex(mapping) });

/** Google's operation, or Anthropic's for a Claude model. */
const byPublisher = <Q, R, E>(ofGoogle: ProviderOperation<Q, R, E>, ofAnthropic: ProviderOperation<Q, R, E>): ProviderOperation<Q, R, E> =>
  ({ ...ofGoogle, forModel: (model) => (isAnthropicModel(model) ? ofAnthropic : ofGoogle) });

export const vertex = {
  chat: byPublisher(google(throughConversation(chatDoor, generateConversation)), anthropic(anthropicChat)),
  messages: byPublisher(google(throughConversation(messagesDoor, generateConversation)), anthropic(anthropicMessages)),
  responses: byPublisher(google(throughConversation(responsesDoor, generateConversation)), anthropic(throughConversation(responsesDoor, messagesConversation))),
  geminiChat: byPublisher(google(generateContent), anthropic(throughConversation(geminiDoor, messagesConversation))),
  // Google's models alone.
  generateContent: google(generateContent),
  speech: google(speech),
  embeddings: { api: vertexGoogleApi, endpoint: vertexGoogleApi.endpoints.predict, mapping: embeddings },
  embedContent: { api: vertexGoogleApi, endpoint: vertexGoogleApi.endpoints.predict, mapping: embedContent },
  // Anthropic's models alone.
  countTokens: { api: vertexAnthropicApi, endpoint: vertexAnthropicApi.endpoints.countTokens, mapping: countTokensOnVertex, servesModel: isAnthropicModel },
};
