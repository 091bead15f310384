/**
 * The Gemini-style provider: `{base_url}/v1beta/models/{model}:generateContent` (and
 * `:streamGenerateContent?alt=sse`) with the channel's key in `x-goog-api-key`, for speech and
 * chat (passed through as the client sent it, or from another door through the conversation
 * model), and `:batchEmbedContents` for embeddings. One
 * entry per operation: its endpoint (`api.ts`) and its mapping (`generate.ts`);
 * `callUpstream` and `streamUpstream` do the rest.
 */
import { geminiApi } from './api.ts';
import { embed } from './embed.ts';
import { embedContent } from './embed-content.ts';
import { generateContent } from './generate.ts';
import { speech } from './speech.ts';
import { generateConversation } from './conversation.ts';
import { messagesDoor } from '../doors/anthropic-messages/index.ts';
import { throughConversation } from '../doors/door.ts';
import { responsesDoor } from '../doors/openai-responses/index.ts';
import { chatDoor } from '../doors/openai-chat/index.ts';

export const gemini = {
  // Speech, and a chat model through Gemini's own door: passed through.
  generateContent: { api: geminiApi, endpoint: geminiApi.endpoints.generateContent, mapping: generateContent },
  geminiChat: { api: geminiApi, endpoint: geminiApi.endpoints.generateContent, mapping: generateContent },
  embeddings: { api: geminiApi, endpoint: geminiApi.endpoints.batchEmbedContents, mapping: embed },
  embedContent: { api: geminiApi, endpoint: geminiApi.endpoints.batchEmbedContents, mapping: embedContent },
  speech: { api: geminiApi, endpoint: geminiApi.endpoints.generateContent, mapping: speech },
  // Anthropic's Messages door, through the conversation model to generateContent.
  messages: { api: geminiApi, endpoint: geminiApi.endpoints.generateContent, mapping: throughConversation(messagesDoor, generateConversation) },
  // OpenAI's chat completions, through the conversation model to generateContent.
  chat: { api: geminiApi, endpoint: geminiApi.endpoints.generateContent, mapping: throughConversation(chatDoor, generateConversation) },
  // OpenAI's Responses door, through the conversation model to generateContent.
  responses: { api: geminiApi, endpoint: geminiApi.endpoints.generateContent, mapping: throughConversation(responsesDoor, generateConversation) },
};
