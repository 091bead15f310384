/**
 * The conversation model's stream (see request.ts): what a provider's stream events say, in one
 * vocabulary a door's encoder writes in its own format. Parts are not opened and closed here: a
 * door that has blocks (Anthropic's content blocks) opens one when the kind of delta changes.
 */
import type { ConversationUsage, StopReason } from './reply.ts';

export type ConversationEvent =
  | { type: 'start'; id: string; usage?: Partial<ConversationUsage> }
  | { type: 'text-delta'; text: string }
  | { type: 'thinking-delta'; thinking: string }
  | { type: 'signature'; signature: string }
  /** A tool call begins; `call` numbers the calls of the reply from 0. */
  | { type: 'tool-call-start'; call: number; id: string; name: string }
  | { type: 'tool-args-delta'; call: number; json: string }
  | { type: 'stop'; stopReason: StopReason; stopSequence?: string | null }
  | { type: 'usage'; usage: ConversationUsage };
