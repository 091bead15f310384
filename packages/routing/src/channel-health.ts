import { defineLuaScripts, type RedisClient as Redis } from '@gateway/config';
import { keys, publishChange, type Change } from '@gateway/store';
import { routingKeys } from './routing-keys.ts';
import { routingScripts } from './scripts.ts';

export interface ChannelHealthOptions {
  /** Consecutive failures after which a channel cools down. */
  failuresBeforeCooldown: number;
  /** How long a cooled-down channel is chosen only as a last resort. */
  cooldownMs: number;
  /** Consecutive 401 answers after which a channel is auto-disabled (status 3). */
  authFailuresBeforeDisable: number;
}

/** What a failure led to: `caller-cooldown`, a channel cooled for the one user whose requests failed on it. */
export type HealthVerdict = 'none' | 'cooldown' | 'caller-cooldown' | 'disabled';

/** A failure as health sees it: whether the upstream refused the channel's credentials. */
export interface ChannelFailure {
  auth: boolean;
  /** Why, for the channel's status_reason when it gets disabled; never a secret. */
  reason: string;
  /** The user whose request failed: a streak of one user's failures cools the channel for that user only. */
  userId?: number;
}

/** A channel's cooldown for one user, as `coolingForCaller` keys it. */
const callerKey = (channelId: number, userId: number) => `${channelId}:${userId}`;

/** Cooldowns for one user kept at most: past it they are dropped (they only ever spare that user a slow channel). */
const MAX_CALLER_COOLDOWNS = 10_000;

type Scripted = Redis & {
  gwRecordChannelFailure(health: string, channel: string, ...args: string[]): Promise<[string, string]>;
};

/**
 * Channel health shared by every worker process: consecutive-failure counters live in Redis,
 * a channel that keeps failing cools down (every process hears it at once on the invalidation
 * feed), and one whose upstream keeps refusing its key is auto-disabled with the reason. A single
 * transient failure changes nothing but a counter; a success resets the counters.
 */
export class ChannelHealth {
  private readonly redis: Scripted;
  private readonly options: ChannelHealthOptions;
  private readonly coolingUntil = new Map<number, number>();
  /** `<channel>:<user>` → until: channels cooled for one user (this process's, as it saw them). */
  private readonly coolingForCaller = new Map<string, number>();

  constructor(redis: Redis, options: ChannelHealthOptions) {
    defineLuaScripts(redis, routingScripts);
    this.redis = redis as Scripted;
    this.options = options;
  }

  /** Whether the channel cools down, for everyone or (given `userId`) for that user. */
  isCoolingDown(channelId: number, userId?: number, now = Date.now()): boolean {
    const until = this.coolingUntil.get(channelId);
    if (until !== undefined && until > now) return true;
    if (userId === undefined) return false;
    const forCaller = this.coolingForCaller.get(callerKey(channelId, userId));
    return forCaller !== undefined && forCaller > now;
  }

  /** Counts a failure; cools the channel down or disables it when the thresholds are reached. */
  async recordFailure(channelId: number, failure: ChannelFailure): Promise<HealthVerdict> {
    const now = Date.now();
    const ttl = Math.max(600_000, this.options.cooldownMs * 2);
    const [verdict, until] = await this.redis.gwRecordChannelFailure(
      routingKeys.health(channelId),
      keys.channel(channelId),
      failure.auth ? '1' : '0',
      String(this.options.failuresBeforeCooldown),
      String(this.options.cooldownMs),
      String(this.options.authFailuresBeforeDisable),
      String(now),
      failure.reason,
      String(ttl),
      failure.userId === undefined ? '' : String(failure.userId),
    );
    if (verdict === 'caller-cooldown') {
      this.coolForCaller(channelId, failure.userId!, Number(until));
      await publishChange(this.redis, { kind: 'channel-cooldown', channelId, until: Number(until), userId: failure.userId });
    } else if (verdict === 'cooldown') {
      this.coolingUntil.set(channelId, Number(until));
      await publishChange(this.redis, { kind: 'channel-cooldown', channelId, until: Number(until) });
    } else if (verdict === 'disabled') {
      await publishChange(this.redis, { kind: 'channels' });
    }
    return verdict as HealthVerdict;
  }

  /**
   * Resets the counters after an answer that shows the channel works (when usage is charged,
   * the usage ledger resets them in the same script instead).
   */
  async recordSuccess(channelId: number): Promise<void> {
    this.noteSuccess(channelId);
    await this.redis.del(routingKeys.health(channelId));
  }

  /** Forgets a local cooldown; the Redis side is reset by the caller's write. */
  noteSuccess(channelId: number, userId?: number): void {
    this.coolingUntil.delete(channelId);
    if (userId !== undefined) this.coolingForCaller.delete(callerKey(channelId, userId));
  }

  /** Loads the cooldowns of these channels (with a channel-table load). */
  async load(channelIds: readonly number[]): Promise<void> {
    if (channelIds.length === 0) {
      this.coolingUntil.clear();
      return;
    }
    const pipeline = this.redis.pipeline();
    for (const id of channelIds) pipeline.hget(routingKeys.health(id), 'cooldown_until');
    const results = (await pipeline.exec()) ?? [];
    const now = Date.now();
    this.coolingUntil.clear();
    results.forEach(([, value], i) => {
      const until = Number(value);
      if (value && until > now) this.coolingUntil.set(channelIds[i]!, until);
    });
  }

  /** Applies a cooldown another process announced. */
  hear(change: Change): void {
    if (change.kind !== 'channel-cooldown') return;
    if (change.userId === undefined) this.coolingUntil.set(change.channelId, change.until);
    else this.coolForCaller(change.channelId, change.userId, change.until);
  }

  private coolForCaller(channelId: number, userId: number, until: number): void {
    if (this.coolingForCaller.size >= MAX_CALLER_COOLDOWNS) this.coolingForCaller.clear();
    this.coolingForCaller.set(callerKey(channelId, userId), until);
  }
}
