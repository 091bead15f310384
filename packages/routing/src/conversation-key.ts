/**
 * Which conversation a model request belongs to, so that its turns go to the channel that served
 * the previous one (`sticky-channels.ts`) and the provider's prompt cache hits. Computed by the
 * gateway's doors, once per request (`conversationOf`), and carried in the job as
 * `ModelCaller.conversation`.
 */
import { createHash } from 'node:crypto';
import type { Conversation } from '@gateway/contracts';

/**
 * Headers a client names its session in: Claude Code's, then a generic one any client may send.
 * The first present wins.
 */
export const SESSION_HEADERS = ['x-claude-code-session-id', 'x-session-id'] as const;

export interface ConversationSource {
  /** The API key's id: two keys (two users) never share a conversation, whatever they send. */
  tokenId: number;
  /** The model the client asked for: the same session on two models is two conversations. */
  model: string;
  /** The request's headers, for a session header (`SESSION_HEADERS`). */
  headers?: Record<string, string | string[] | undefined>;
  /**
   * What stays the same from one turn of the conversation to the next (`chatOpening`): hashed
   * when no session header names the conversation. Undefined when the request has none.
   */
  opening?: unknown;
  /** The request holds its opening and nothing more (`Conversation.opening`). */
  openingOnly?: boolean;
  /**
   * The key of the conversation this request continues, as its door kept it (the Responses
   * door stores it with each response, and passes the previous response's for a
   * `previous_response_id`). Wins over the rest.
   */
  continues?: string;
}

/**
 * The request's conversation, or undefined when nothing names one. Its key is a hash (never the
 * session id or the messages themselves, which would reach Redis as the sticky record's key). A
 * session named by its client, or continued by its door, is a conversation from its first turn;
 * an opening alone may be a one-off request (`Conversation.opening`).
 */
export function conversationOf(source: ConversationSource): Conversation | undefined {
  if (source.continues) return { key: source.continues };
  const session = sessionIdOf(source.headers);
  if (session !== undefined) return { key: digest(['session', source.tokenId, source.model, session]) };
  if (source.opening === undefined) return undefined;
  const opening = JSON.stringify(source.opening) ?? '';
  // An opening of megabytes (an image, a document) is named well enough by its start and length,
  // and hashing all of it on the gateway's event loop would cost every turn milliseconds.
  const key = digest(['opening', source.tokenId, source.model, opening.length, opening.slice(0, OPENING_CHARS_HASHED)]);
  return source.openingOnly ? { key, opening: true } : { key };
}

/** The key alone of `conversationOf`. */
export const conversationKey = (source: ConversationSource): string | undefined => conversationOf(source)?.key;

/** The session the client named in a header, if any (`SESSION_HEADERS`, first present). */
export function sessionIdOf(headers: ConversationSource['headers']): string | undefined {
  if (!headers) return undefined;
  for (const name of SESSION_HEADERS) {
    const value = headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string' && first.trim() !== '') return first.trim();
  }
  return undefined;
}

/**
 * A chat's opening: its messages up to and including the first user message (the system or
 * developer prompt and the first question), which every later turn repeats as it grows; and
 * whether the chat holds nothing more. Undefined when there is no user message.
 */
export function chatOpening(messages: readonly { role: string }[]): Pick<ConversationSource, 'opening' | 'openingOnly'> {
  const firstUser = messages.findIndex((m) => m.role === 'user');
  if (firstUser < 0) return {};
  return { opening: messages.slice(0, firstUser + 1), openingOnly: firstUser === messages.length - 1 };
}

/** Characters of an opening's JSON that name it, with its length. */
const OPENING_CHARS_HASHED = 64 * 1024;

const digest = (parts: unknown[]) => createHash('sha256').update(JSON.stringify(parts)).digest('base64url');
