import { defineLuaScripts, type RedisClient as Redis } from '@gateway/config';
import { chargedNanos, insufficientQuota, invalidApiKey, tokenCount, type ModelCaller } from '@gateway/contracts';
import { keys, QuotaHolds, type SettledUsage } from '@gateway/store';
import { routingKeys } from './routing-keys.ts';
import { routingScripts } from './scripts.ts';

/** Usage of one request, in quota units (one unit per token). */
export interface Usage {
  totalTokens: number;
  /** The split, when the upstream reported it (for the request log; the charge is `totalTokens`). */
  promptTokens?: number;
  completionTokens?: number;
  /** Prompt tokens read from the provider's prompt cache, and written to it, when it reported them (for the request log). */
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

export interface Charge {
  caller: ModelCaller;
  channelId: number;
  usage: Usage;
  /** What it cost, in nano-dollars (`costOf`); unset: its model has no price. */
  cost?: number;
  /** Upstream latency of the answer, recorded as the channel's `response_time`. */
  responseTimeMs: number;
  /** False for an answer cut short after output reached the client: charged, but no sign of health. */
  healthy?: boolean;
}

type Scripted = Redis & {
  gwChargeToken(token: string, quota: number, now: number, cost: number): Promise<number>;
  gwChargeUser(user: string, quota: number, requests: number, cost: number): Promise<number>;
  gwChargeChannel(channel: string, health: string, quota: number, ms: number, healthy: string): Promise<number>;
};

interface ChannelCharge { quota: number; responseTimeMs: number; healthy: boolean }
interface UserCharge { quota: number; requests: number; cost: number }
/** A key's charge: quota units and nano-dollars. */
interface TokenCharge { quota: number; cost: number }
/** A key's and its user's quota as last read, with this process's charges since applied. */
interface QuotaSnapshot { remain: number; unlimited: boolean; allowance: number; used: number; readAt: number }

export interface UsageLedgerOptions {
  /**
   * Charges are added up in memory and written every this many ms, one script per key, user and
   * channel that was charged: off the reply path, and a handful of commands however many
   * requests a flush covers. 0 writes every charge at once (still not awaited by the reply).
   * A crash loses what was not yet written: at most this long of usage. Default 100.
   */
  flushMs?: number;
  /** Told when a flush fails (it is retried with the next one). */
  onFlushError?: (error: Error) => void;
  /**
   * How long a quota read from Redis answers the checks of later requests by the same key
   * (with this process's own charges taken off as they happen). Other processes' charges reach
   * it within this time plus `flushMs`; a change by an administrator at once (`forgetQuotas`).
   * 0 reads Redis for every check. Default 250.
   */
  quotaCacheMs?: number;
}

/**
 * The quota check before an upstream call and the charge after it. A charge adds to the key's
 * `used_quota` and takes from its `remain_quota` (unless unlimited), adds to the user's
 * `used_quota` and `request_count`, adds to the channel's `used_quota` and sets its
 * `response_time`. Charges wait in memory for the next flush (see `flushMs`). The quota check
 * reads a key's quota at most every `quotaCacheMs` and takes this process's charges off it as
 * they happen, so it lets a request through while quota remains, and concurrent requests
 * overspend by at most what the requests in flight, and other workers' charges of the last
 * `quotaCacheMs + flushMs`, use.
 *
 * A user's `quota` is the user's allowance: when above 0, the user is out of quota once
 * `used_quota` reaches it; 0 means the user has no allowance of its own (its keys' still apply).
 */
export class UsageLedger {
  private readonly redis: Scripted;
  private readonly flushMs: number;
  private readonly onFlushError: (error: Error) => void;
  private tokens = new Map<number, TokenCharge>();
  private users = new Map<number, UserCharge>();
  private channels = new Map<number, ChannelCharge>();
  /** Holds (of requests a gateway held quota for) → the quota and cost their answer used, until settled. */
  private readonly held = new Map<string, SettledUsage>();
  private unsettled: { caller: ModelCaller; usage: SettledUsage | undefined }[] = [];
  private readonly holds: QuotaHolds;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly quotaCacheMs: number;
  /** `${tokenId}:${userId}` → the quota last read. */
  private readonly quotas = new Map<string, QuotaSnapshot>();

  constructor(redis: Redis, options: UsageLedgerOptions = {}) {
    defineLuaScripts(redis, routingScripts);
    this.redis = redis as Scripted;
    this.flushMs = options.flushMs ?? 100;
    this.onFlushError = options.onFlushError ?? (() => {});
    this.quotaCacheMs = options.quotaCacheMs ?? 250;
    this.holds = new QuotaHolds(redis);
  }

  /**
   * The request has ended. One the gateway held quota for has its key and user charged and its
   * hold given back at once, in one step (awaited: its next request must find its in-flight slot
   * free). Should that fail (Redis away), the same settle is tried again with each flush: it
   * charges only a hold still held, so a job run again meanwhile (its answer lost with Redis)
   * is charged once, by whichever settle comes first. Never throws.
   */
  async settle(caller: ModelCaller): Promise<void> {
    if (!caller.hold) return;
    const usage = this.held.get(caller.hold);
    this.held.delete(caller.hold);
    try {
      await this.holds.settle(caller.tokenId, caller.userId, caller.hold, usage);
    } catch (error) {
      this.unsettled.push({ caller, usage });
      this.schedule();
      this.onFlushError(error as Error);
    }
  }

  /** Settles that failed, tried again (see `settle`). */
  private settleAgain(): Promise<unknown>[] {
    const unsettled = this.unsettled;
    this.unsettled = [];
    return unsettled.map(({ caller, usage }) =>
      this.holds.settle(caller.tokenId, caller.userId, caller.hold!, usage)
        .catch((e: Error) => this.retry(e, () => this.unsettled.push({ caller, usage }))),
    );
  }

  /** Throws 429 insufficient_quota (x-should-retry: false) when the key or the user is out of quota. */
  async assertQuota(caller: ModelCaller): Promise<void> {
    const quota = await this.quotaOf(caller);
    if (!quota.unlimited && quota.remain <= 0) {
      throw insufficientQuota('this API key has used up its quota; raise its remain_quota or make it unlimited');
    }
    if (quota.allowance > 0 && quota.used >= quota.allowance) {
      throw insufficientQuota('your account has used up its quota; ask an administrator to raise it');
    }
  }

  /** Drops every quota read: the next checks read Redis (a key or user was changed). */
  forgetQuotas(): void {
    this.quotas.clear();
  }

  /** The caller's quota: as read less than `quotaCacheMs` ago, else from Redis (less unwritten charges). */
  private async quotaOf(caller: ModelCaller): Promise<QuotaSnapshot> {
    const id = `${caller.tokenId}:${caller.userId}`;
    const cached = this.quotas.get(id);
    if (cached && Date.now() - cached.readAt < this.quotaCacheMs) return cached;
    const readAt = Date.now();
    const [token, user] = await Promise.all([
      this.redis.hmget(keys.token(caller.tokenId), 'remain_quota', 'unlimited_quota', 'id'),
      this.redis.hmget(keys.user(caller.userId), 'quota', 'used_quota', 'id'),
    ]);
    const [remain, unlimited, tokenId] = token;
    const [allowance, used, userId] = user;
    if (!tokenId || !userId) {
      this.quotas.delete(id);
      throw invalidApiKey('this API key no longer exists');
    }
    const snapshot: QuotaSnapshot = {
      remain: Number(remain ?? 0) - (this.tokens.get(caller.tokenId)?.quota ?? 0),
      unlimited: unlimited === '1',
      allowance: Number(allowance ?? 0),
      used: Number(used ?? 0) + (this.users.get(caller.userId)?.quota ?? 0),
      readAt,
    };
    if (this.quotaCacheMs > 0) {
      if (this.quotas.size >= 10_000) this.quotas.clear();
      this.quotas.set(id, snapshot);
    }
    return snapshot;
  }

  /** Adds the usage to the key, the user and the channel (at the next flush), and marks the channel healthy. */
  charge(charge: Charge): void {
    const quota = tokenCount(charge.usage.totalTokens);
    const cost = chargedNanos(charge.cost);
    const snapshot = this.quotas.get(`${charge.caller.tokenId}:${charge.caller.userId}`);
    if (snapshot) {
      snapshot.remain -= quota;
      snapshot.used += quota;
    }
    if (charge.caller.hold) {
      // Charged with its hold's release when the request settles.
      const held = this.held.get(charge.caller.hold);
      this.held.set(charge.caller.hold, { quota: (held?.quota ?? 0) + quota, cost: (held?.cost ?? 0) + cost });
    } else {
      this.addToken(charge.caller.tokenId, { quota, cost });
      this.addUser(charge.caller.userId, { quota, requests: 1, cost });
    }
    const responseTimeMs = Math.max(0, Math.round(charge.responseTimeMs));
    this.addChannel(charge.channelId, { quota, responseTimeMs, healthy: charge.healthy !== false }, true);
    this.schedule();
  }

  private schedule(): void {
    if (this.flushMs === 0) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** Writes every charge not yet written; resolves once they are (or have failed, to be retried). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const tokens = this.tokens;
    const users = this.users;
    const channels = this.channels;
    if (tokens.size === 0 && users.size === 0 && channels.size === 0 && this.unsettled.length === 0) return this.flushing;
    this.tokens = new Map();
    this.users = new Map();
    this.channels = new Map();
    const now = Math.floor(Date.now() / 1000);
    const writes: Promise<unknown>[] = this.settleAgain();
    for (const [id, charge] of tokens) {
      writes.push(this.redis.gwChargeToken(keys.token(id), charge.quota, now, charge.cost).catch((e: Error) => this.retry(e, () => this.addToken(id, charge))));
    }
    for (const [id, charge] of users) {
      writes.push(this.redis.gwChargeUser(keys.user(id), charge.quota, charge.requests, charge.cost).catch((e: Error) => this.retry(e, () => this.addUser(id, charge))));
    }
    for (const [id, charge] of channels) {
      writes.push(
        this.redis.gwChargeChannel(keys.channel(id), routingKeys.health(id), charge.quota, charge.responseTimeMs, charge.healthy ? '1' : '0')
          .catch((e: Error) => this.retry(e, () => this.addChannel(id, charge))),
      );
    }
    this.flushing = Promise.all(writes).then(() => {});
    return this.flushing;
  }

  /** Flushes what is left and stops; later charges are written at once. */
  async close(): Promise<void> {
    await this.flush();
  }

  private retry(error: Error, putBack: () => void): void {
    // A charge Redis refuses for its value would be refused at every flush, and hold back every
    // later charge added to it: it is reported and dropped. Anything else is tried again.
    if (!/not an integer|out of range|overflow/i.test(error.message)) putBack();
    this.onFlushError(error);
    this.timer ??= setTimeout(() => void this.flush(), Math.max(this.flushMs, 250));
  }

  private addToken(id: number, charge: TokenCharge): void {
    const token = this.tokens.get(id);
    this.tokens.set(id, { quota: (token?.quota ?? 0) + charge.quota, cost: (token?.cost ?? 0) + charge.cost });
  }

  private addUser(id: number, charge: UserCharge): void {
    const user = this.users.get(id);
    if (user) {
      user.quota += charge.quota;
      user.requests += charge.requests;
      user.cost += charge.cost;
    } else {
      this.users.set(id, { ...charge });
    }
  }

  /** `latest`: this charge's response time and health replace those already waiting. */
  private addChannel(id: number, charge: ChannelCharge, latest = false): void {
    const channel = this.channels.get(id);
    if (!channel) {
      this.channels.set(id, { ...charge });
      return;
    }
    channel.quota += charge.quota;
    if (latest) {
      channel.responseTimeMs = charge.responseTimeMs;
      channel.healthy = charge.healthy;
    }
  }
}
