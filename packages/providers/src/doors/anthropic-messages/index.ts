/**
 * Anthropic's Messages API as a door: its request to the conversation model and the model's
 * reply and stream back (see door.ts). On an `anthropic` channel the door is not used: the
 * request passes through (anthropic/messages.ts).
 */
import type { MessagesRequest, MessagesResponse, MessagesStreamEvent } from '@gateway/contracts';
import type { DoorMapping } from '../door.ts';
import { conversationToMessages } from './from-conversation.ts';
import { messagesEncoder } from './stream-encoder.ts';
import { messagesToConversation } from './to-conversation.ts';

export const messagesDoor: DoorMapping<MessagesRequest, MessagesResponse, MessagesStreamEvent> = {
  toConversation: messagesToConversation,
  fromConversation: conversationToMessages,
  encoder: messagesEncoder,
  isLast: (event) => event.type === 'message_stop',
};
