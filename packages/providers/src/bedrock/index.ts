/**
 * AWS Bedrock: chat through the Converse API (whole) and ConverseStream (AWS's event stream), for
 * every door through the conversation model (`converse.ts`), and embeddings through InvokeModel
 * for Titan and Cohere models (`embeddings.ts`); every request signed with Signature V4
 * (`api.ts`) with the channel's AWS credential (`credential.ts`).
 */
import { chatDoor } from '../doors/openai-chat/index.ts';
import { messagesDoor } from '../doors/anthropic-messages/index.ts';
import { responsesDoor } from '../doors/openai-responses/index.ts';
import { geminiDoor } from '../doors/gemini-generate/index.ts';
import { throughConversation } from '../doors/door.ts';
import { bedrockApi } from './api.ts';
import { converseConversation } from './converse.ts';
import { embeddings } from './embeddings.ts';

const converse = bedrockApi.endpoints.converse;

export const bedrock = {
  chat: { api: bedrockApi, endpoint: converse, mapping: throughConversation(chatDoor, converseConversation) },
  messages: { api: bedrockApi, endpoint: converse, mapping: throughConversation(messagesDoor, converseConversation) },
  responses: { api: bedrockApi, endpoint: converse, mapping: throughConversation(responsesDoor, converseConversation) },
  geminiChat: { api: bedrockApi, endpoint: converse, mapping: throughConversation(geminiDoor, converseConversation) },
  embeddings: { api: bedrockApi, endpoint: bedrockApi.endpoints.invoke, mapping: embeddings },
};
