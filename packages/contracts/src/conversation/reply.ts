/** The conversation model's reply (see request.ts): what a provider answered, in one shape. */
import type { ConversationPart } from './request.ts';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal' | 'pause_turn';

/**
 * Tokens as the provider counted them. `inputTokens` is the prompt that was neither read from nor
 * written to the cache (Anthropic's `input_tokens`); the whole prompt is its sum with the two
 * cache counts. A count the provider did not report is left out, never 0.
 */
export interface ConversationUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  /** Of the output, those spent reasoning. */
  reasoningTokens?: number;
}

export interface ConversationReply {
  id: string;
  parts: ConversationPart[];
  stopReason: StopReason;
  stopSequence?: string | null;
  usage: ConversationUsage;
}

/** Every prompt token, cached or not. */
export const promptTokensOf = (usage: ConversationUsage) => usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0);

/**
 * The prompt cache's writes where a door's wire usage has no field for them (Responses' `usage`,
 * Gemini's `usageMetadata`): kept on the usage object under a symbol, which a spread copies and
 * no JSON carries, so the worker charges them at the channel's cache_write_ratio and logs them
 * while the client sees its door's own fields only.
 */
export const CACHE_WRITE_TOKENS: unique symbol = Symbol('cacheWriteTokens');

export function withCacheWrites<T extends object>(usage: T, written: number | undefined): T {
  return written === undefined ? usage : Object.assign(usage, { [CACHE_WRITE_TOKENS]: written });
}

export function cacheWritesOf(usage: unknown): number | undefined {
  const written = typeof usage === 'object' && usage !== null ? (usage as { [CACHE_WRITE_TOKENS]?: unknown })[CACHE_WRITE_TOKENS] : undefined;
  return typeof written === 'number' ? written : undefined;
}
