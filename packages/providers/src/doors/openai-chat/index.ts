/**
 * OpenAI's chat completions as a door: its request to the conversation model and the model's
 * reply and stream back (see door.ts), for a provider that has a conversation mapping and no
 * chat mapping of its own (gemini). An `openai` channel takes the request as it came
 * (openai/chat.ts); an `anthropic` channel keeps its own chat mapping (anthropic/chat.ts).
 */
import type { ChatChunk, ChatRequest, ChatResponse } from '@gateway/contracts';
import type { DoorMapping } from '../door.ts';
import { conversationToChat } from './from-conversation.ts';
import { chatEncoder } from './stream-encoder.ts';
import { chatToConversation } from './to-conversation.ts';

export const chatDoor: DoorMapping<ChatRequest, ChatResponse, ChatChunk> = {
  toConversation: chatToConversation,
  fromConversation: conversationToChat,
  encoder: chatEncoder,
  // The finish chunk completes the stream (the usage chunk, when the provider reported usage, comes with it).
  isLast: (chunk) => chunk.choices.some((choice) => choice.finish_reason !== null),
};
