/**
 * The OpenAI-style provider: `{base_url}/v1/completions` with `Authorization: Bearer <key>`,
 * whole or streamed. One entry per operation: its endpoint (`api.ts`) and its mapping
 * (`complete.ts`); `callUpstream` and `streamUpstream` do the rest.
 */
import { openaiApi } from './api.ts';
import { chat } from './chat.ts';
import { completions } from './complete.ts';
import { embeddings } from './embeddings.ts';
import { embedContent } from './embed-content.ts';
import { speech } from './speech.ts';
import { responses } from './responses.ts';
import { chatConversation } from './conversation.ts';
import { messagesDoor } from '../doors/anthropic-messages/index.ts';
import { throughConversation } from '../doors/door.ts';
import { responsesDoor } from '../doors/openai-responses/index.ts';
import { geminiDoor } from '../doors/gemini-generate/index.ts';

export const openai = {
  completions: { api: openaiApi, endpoint: openaiApi.endpoints.completions, mapping: completions },
  chat: { api: openaiApi, endpoint: openaiApi.endpoints.chat, mapping: chat },
  embeddings: { api: openaiApi, endpoint: openaiApi.endpoints.embeddings, mapping: embeddings },
  embedContent: { api: openaiApi, endpoint: openaiApi.endpoints.embeddings, mapping: embedContent },
  speech: { api: openaiApi, endpoint: openaiApi.endpoints.speech, mapping: speech, replies: 'audio' as const },
  // Anthropic's Messages door, through the conversation model to chat completions.
  messages: { api: openaiApi, endpoint: openaiApi.endpoints.chat, mapping: throughConversation(messagesDoor, chatConversation) },
  // OpenAI's Responses door, through the conversation model to chat completions.
  responses: { api: openaiApi, endpoint: openaiApi.endpoints.chat, mapping: throughConversation(responsesDoor, chatConversation) },
  // The same door passed through, on a channel whose upstream serves the Responses API (`responses_api`).
  responsesNative: { api: openaiApi, endpoint: openaiApi.endpoints.responses, mapping: responses },
  // Gemini's door for a chat model, through the conversation model to chat completions.
  geminiChat: { api: openaiApi, endpoint: openaiApi.endpoints.chat, mapping: throughConversation(geminiDoor, chatConversation) },
};
