import type { RedisClient as Redis } from '@gateway/config';
import type { Conversation } from '@gateway/contracts';
import { routingKeys } from './routing-keys.ts';

export interface StickyChannelsOptions {
  /**
   * How long a conversation's channel is remembered after its last turn (each turn starts the
   * time again). Default 1 h: past the prompt caches providers keep (5 min to 1 h). 0 turns
   * stickiness off: no conversation is looked up or remembered.
   */
  ttlMs?: number;
  /**
   * How long the channel of a request that holds only a conversation's opening is remembered
   * (`Conversation.opening`): perhaps a one-off request, so only as long as a provider keeps a
   * prompt cache by default. Keeps Redis from holding an hour of one-off requests. Default 5 min.
   */
  openingTtlMs?: number;
}

/**
 * Which channel served each conversation's last turn, shared by every worker process: one Redis
 * string per conversation (`routingKeys.sticky`), its key the conversation's hash
 * (`conversationKey`), living `ttlMs` after the turn that wrote it.
 */
export class StickyChannels {
  readonly ttlMs: number;
  readonly openingTtlMs: number;
  private readonly redis: Redis;

  constructor(redis: Redis, options: StickyChannelsOptions = {}) {
    this.redis = redis;
    this.ttlMs = options.ttlMs ?? 3_600_000;
    this.openingTtlMs = Math.min(this.ttlMs, options.openingTtlMs ?? 300_000);
  }

  /** Whether conversations are kept on a channel at all (`ttlMs` above 0). */
  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  /** The channel of the conversation's last turn; undefined for none, or when Redis cannot say (the request is routed as a new one). */
  async lastChannel(conversation: Conversation): Promise<number | undefined> {
    const value = await this.redis.get(routingKeys.sticky(conversation.key)).catch(() => null);
    const id = value === null ? NaN : Number(value);
    return Number.isSafeInteger(id) ? id : undefined;
  }

  /** The channel that served this turn. Not awaited by the answer: a lost write costs one cache miss. */
  remember(conversation: Conversation, channelId: number): Promise<void> {
    const ttlMs = conversation.opening ? this.openingTtlMs : this.ttlMs;
    if (ttlMs <= 0) return Promise.resolve();
    return this.redis.set(routingKeys.sticky(conversation.key), String(channelId), 'PX', ttlMs).then(() => undefined, () => undefined);
  }
}
