import type { RedisClient as Redis } from '@gateway/config';
import { routingKeys } from './routing-keys.ts';

export interface StickyChannelsOptions {
  /**
   * How long a conversation's channel is remembered after its last turn (each turn starts the
   * time again). Default 1 h: past the prompt caches providers keep (5 min to 1 h).
   */
  ttlMs?: number;
}

/**
 * Which channel served each conversation's last turn, shared by every worker process: one Redis
 * string per conversation (`routingKeys.sticky`), its key the conversation's hash
 * (`conversationKey`), living `ttlMs` after the turn that wrote it.
 */
export class StickyChannels {
  readonly ttlMs: number;
  private readonly redis: Redis;

  constructor(redis: Redis, options: StickyChannelsOptions = {}) {
    this.redis = redis;
    this.ttlMs = options.ttlMs ?? 3_600_000;
  }

  /** The channel of the conversation's last turn; undefined for none, or when Redis cannot say (the request is routed as a new one). */
  async lastChannel(conversation: string): Promise<number | undefined> {
    const value = await this.redis.get(routingKeys.sticky(conversation)).catch(() => null);
    const id = value === null ? NaN : Number(value);
    return Number.isSafeInteger(id) ? id : undefined;
  }

  /** The channel that served this turn. Not awaited by the answer: a lost write costs one cache miss. */
  remember(conversation: string, channelId: number): Promise<void> {
    return this.redis.set(routingKeys.sticky(conversation), String(channelId), 'PX', this.ttlMs).then(() => undefined, () => undefined);
  }
}
