/**
 * The opening of a conversation (`ConversationSource.opening`) in each door's own format: its
 * system prompt and its turns up to and including the first user turn, which every later turn
 * of the conversation repeats as it grows (`chatOpening` is the chat completions door's).
 */
import type { ChatRequest, GeminiChatRequest, MessagesRequest, ModelOperation } from '@gateway/contracts';
import { chatOpening, type ConversationSource } from './conversation-key.ts';

type Opening = Pick<ConversationSource, 'opening' | 'openingOnly'>;

/** The preamble (undefined: none) and the turns up to `firstUser`; none without a user turn. */
function openingOf(preamble: unknown, turns: readonly unknown[], firstUser: number): Opening {
  if (firstUser < 0) return {};
  const opening = turns.slice(0, firstUser + 1);
  return { opening: preamble === undefined ? opening : [preamble, ...opening], openingOnly: firstUser === turns.length - 1 };
}

type Turn = { role?: string; content?: unknown };

/**
 * A block without its `cache_control` mark: clients move their cache breakpoint to the newest
 * turn (Claude Code, the SDKs' examples), so the first user message carries the mark on the
 * first turn only, and the opening must hash the same on every turn.
 */
function unmarked(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  return content.map((block: unknown) => {
    if (typeof block !== 'object' || block === null || !('cache_control' in block)) return block;
    const { cache_control: _mark, ...rest } = block as Record<string, unknown>;
    return rest;
  });
}

/** Anthropic's Messages: `system` and the messages up to the first user message, cache marks aside. */
export function messagesOpening(request: { system?: unknown; messages: readonly Turn[] }): Opening {
  const firstUser = request.messages.findIndex((m) => m.role === 'user');
  const turns = firstUser < 0 ? request.messages : request.messages.slice(0, firstUser + 1).map((m) => ({ ...m, content: unmarked(m.content) }));
  const opening = openingOf(request.system === undefined ? undefined : unmarked(request.system), turns, firstUser);
  return opening.opening === undefined ? opening : { ...opening, openingOnly: firstUser === request.messages.length - 1 };
}

/**
 * OpenAI's Responses: `instructions` and the input up to its first user message (an input given
 * as a string is that message, as a later turn's items repeat it).
 */
export function responsesOpening(request: { instructions?: unknown; input?: unknown }): Opening {
  const items: readonly Turn[] = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : Array.isArray(request.input) ? request.input : [];
  return openingOf(request.instructions ?? undefined, items, items.findIndex((item) => item.role === 'user'));
}

/** Gemini's: `systemInstruction` and the contents up to the first user turn (a turn without a role is the user's, as one with it). */
export function geminiOpening(request: { systemInstruction?: unknown; contents: readonly Turn[] }): Opening {
  const firstUser = request.contents.findIndex((content) => (content.role ?? 'user') === 'user');
  if (firstUser < 0) return {};
  const turns = request.contents.slice(0, firstUser + 1).map((content) => (content.role ? content : { role: 'user', ...content }));
  return { ...openingOf(request.systemInstruction, turns, firstUser), openingOnly: firstUser === request.contents.length - 1 };
}

/**
 * The opening of each operation's request, for `conversationOf`. A completion has none: its
 * turns are one conversation by their session header alone (a prompt has no fixed opening). An
 * operation not named here is never a conversation's turn (embeddings, token counts, speech).
 * The Responses door's (`responsesOpening`) is its own route's, beside the key of the response
 * a request continues.
 */
export const openingOfOperation: Partial<Record<ModelOperation, (request: unknown) => Opening>> = {
  completions: () => ({}),
  chat: (request) => chatOpening((request as ChatRequest).messages),
  messages: (request) => messagesOpening(request as MessagesRequest),
  geminiChat: (request) => geminiOpening(request as GeminiChatRequest),
};
