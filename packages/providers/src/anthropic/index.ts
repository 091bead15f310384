/**
 * The Anthropic-style provider: `{base_url}/v1/messages` with the channel's key in `x-api-key`,
 * for chat completions, whole or streamed. One entry per operation: its endpoint (`api.ts`) and
 * its mapping (`chat.ts`); `callUpstream` and `streamUpstream` do the rest.
 */
import { anthropicApi } from './api.ts';
import { chat } from './chat.ts';
import { countTokens, messages } from './messages.ts';
import { messagesConversation } from './conversation.ts';
import { responsesDoor } from '../doors/openai-responses/index.ts';
import { throughConversation } from '../doors/door.ts';
import { geminiDoor } from '../doors/gemini-generate/index.ts';

export const anthropic = {
  chat: { api: anthropicApi, endpoint: anthropicApi.endpoints.chat, mapping: chat },
  messages: { api: anthropicApi, endpoint: anthropicApi.endpoints.messages, mapping: messages },
  countTokens: { api: anthropicApi, endpoint: anthropicApi.endpoints.countTokens, mapping: countTokens },
  // OpenAI's Responses door, through the conversation model to Messages.
  responses: { api: anthropicApi, endpoint: anthropicApi.endpoints.messages, mapping: throughConversation(responsesDoor, messagesConversation) },
  // Gemini's door for a chat model, through the conversation model to Messages.
  geminiChat: { api: anthropicApi, endpoint: anthropicApi.endpoints.messages, mapping: throughConversation(geminiDoor, messagesConversation) },
};
