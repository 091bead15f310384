/**
 * OpenAI's Responses API as a door: its request to the conversation model and the model's reply
 * and stream back (see door.ts), for any provider with a conversation mapping (chat completions
 * on an `openai` channel, Messages on an `anthropic` one). Its stream is complete at
 * `response.completed` (or `response.incomplete`).
 */
import type { ResponsesRequest, ResponsesResponse, ResponsesStreamEvent } from '@gateway/contracts';
import type { DoorMapping } from '../door.ts';
import { conversationToResponse } from './from-conversation.ts';
import { responsesEncoder } from './stream-encoder.ts';
import { responsesToConversation } from './to-conversation.ts';

const door = {
  toConversation: responsesToConversation,
  fromConversation: conversationToResponse,
  encoder: responsesEncoder,
  isLast: (event: ResponsesStreamEvent) => event.type === 'response.completed' || event.type === 'response.incomplete',
};

export const responsesDoor: DoorMapping<ResponsesRequest, ResponsesResponse, ResponsesStreamEvent> = door;
