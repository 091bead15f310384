/**
 * The OpenAI-style provider: `{base_url}/v1/completions` with `Authorization: Bearer <key>`,
 * whole or streamed. One entry per operation: its endpoint (`api.ts`) and its mapping
 * (`complete.ts`); `callUpstream` and `streamUpstream` do the rest. `openaiStyle` offers the
 * same operations on another upstream that speaks OpenAI's wire format at its own endpoints
 * (Azure OpenAI's deployments).
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
import type { Endpoint, ProviderApi } from '../provider.ts';

/** An upstream of OpenAI's wire format: its endpoint of each operation it serves. */
type OpenAIStyleApi = ProviderApi & { endpoints: Record<'completions' | 'chat' | 'embeddings' | 'speech', Endpoint> };

/** The operations of an upstream that speaks OpenAI's wire format, at the endpoints its `api` names. */
export function openaiStyle(api: OpenAIStyleApi) {
  return {
    completions: { api, endpoint: api.endpoints.completions, mapping: completions },
    chat: { api, endpoint: api.endpoints.chat, mapping: chat },
    embeddings: { api, endpoint: api.endpoints.embeddings, mapping: embeddings },
    embedContent: { api, endpoint: api.endpoints.embeddings, mapping: embedContent },
    speech: { api, endpoint: api.endpoints.speech, mapping: speech, replies: 'audio' as const },
    // Anthropic's Messages door, through the conversation model to chat completions.
    messages: { api, endpoint: api.endpoints.chat, mapping: throughConversation(messagesDoor, chatConversation) },
    // OpenAI's Responses door, through the conversation model to chat completions.
    responses: { api, endpoint: api.endpoints.chat, mapping: throughConversation(responsesDoor, chatConversation) },
    // Gemini's door for a chat model, through the conversation model to chat completions.
    geminiChat: { api, endpoint: api.endpoints.chat, mapping: throughConversation(geminiDoor, chatConversation) },
  };
}

export const openai = {
  ...openaiStyle(openaiApi),
  // The Responses door passed through, on a channel whose upstream serves the Responses API (`responses_api`).
  responsesNative: { api: openaiApi, endpoint: openaiApi.endpoints.responses, mapping: responses },
};
