/**
 * Gemini's GenerateContent as a door: its request to the conversation model and the model's
 * reply and stream back (see door.ts). On a `gemini` channel the door is not used: the request
 * passes through (gemini/generate.ts).
 */
import type { GeminiChatRequest, GeminiGenerateResponse } from '@gateway/contracts';
import type { DoorMapping } from '../door.ts';
import { conversationToGemini } from './from-conversation.ts';
import { geminiEncoder } from './stream-encoder.ts';
import { geminiToConversation } from './to-conversation.ts';

export const geminiDoor: DoorMapping<GeminiChatRequest, GeminiGenerateResponse, GeminiGenerateResponse> = {
  toConversation: geminiToConversation,
  fromConversation: conversationToGemini,
  encoder: geminiEncoder,
  isLast: (event) => event.candidates?.some((candidate) => candidate.finishReason) === true,
};
