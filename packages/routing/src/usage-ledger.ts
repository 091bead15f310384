import type { Redis } from 'ioredis';
import { GatewayError, type ModelCaller } from '@gateway/contracts';
import { keys } from '@gateway/store';
import { routingKeys } from './routing-keys.ts';

/** Usage of one request, in quota units (one unit per token). */
export interface Usage {
  totalTokens: number;
}

export interface Charge {
  caller: ModelCaller;
  channelId: number;
  usage: Usage;
  /** Upstream latency of the answer, recorded as the channel's `response_time`. */
  responseTimeMs: number;
  /** False for an answer cut short after output reached the client: charged, but no sign of health. */
  healthy?: boolean;
}

// KEYS: token, user, channel, channel health. ARGV: quota, response time ms, now (s), healthy (1/0).
// Records that vanished meanwhile are not recreated as fragments.
const CHARGE = `
local quota = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'unlimited_quota') ~= '1' then
    redis.call('HINCRBY', KEYS[1], 'remain_quota', -quota)
  end
  redis.call('HINCRBY', KEYS[1], 'used_quota', quota)
  redis.call('HSET', KEYS[1], 'accessed_time', ARGV[3])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], 'used_quota', quota)
  redis.call('HINCRBY', KEYS[2], 'request_count', 1)
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HINCRBY', KEYS[3], 'used_quota', quota)
  redis.call('HSET', KEYS[3], 'response_time', ARGV[2])
end
if ARGV[4] ~= '0' then redis.call('DEL', KEYS[4]) end
return 1
`;

type Scripted = Redis & {
  gwChargeUsage(token: string, user: string, channel: string, health: string, quota: string, ms: string, now: string, healthy: string): Promise<number>;
};

const outOfQuota = (message: string) =>
  new GatewayError({ status: 429, code: 'insufficient_quota', message, shouldRetry: false });

/**
 * The quota check before an upstream call and the charge after it. The charge is one atomic
 * script: the key's `used_quota` up and `remain_quota` down (unless unlimited), the user's
 * `used_quota` and `request_count` up, the channel's `used_quota` up and its `response_time`
 * set. The check lets a request through while quota remains, so concurrent requests overspend
 * by at most what the requests in flight use.
 *
 * A user's `quota` is the user's allowance: when above 0, the user is out of quota once
 * `used_quota` reaches it; 0 means the user has no allowance of its own (its keys' still apply).
 */
export class UsageLedger {
  private readonly redis: Scripted;

  constructor(redis: Redis) {
    this.redis = redis as Scripted;
    redis.defineCommand('gwChargeUsage', { numberOfKeys: 4, lua: CHARGE });
  }

  /** Throws 429 insufficient_quota (x-should-retry: false) when the key or the user is out of quota. */
  async assertQuota(caller: ModelCaller): Promise<void> {
    const [token, user] = await Promise.all([
      this.redis.hmget(keys.token(caller.tokenId), 'remain_quota', 'unlimited_quota', 'id'),
      this.redis.hmget(keys.user(caller.userId), 'quota', 'used_quota', 'id'),
    ]);
    const [remain, unlimited, tokenId] = token;
    const [allowance, used, userId] = user;
    if (!tokenId || !userId) {
      throw new GatewayError({ status: 401, code: 'invalid_api_key', message: 'this API key no longer exists' });
    }
    if (unlimited !== '1' && Number(remain ?? 0) <= 0) {
      throw outOfQuota('this API key has used up its quota; raise its remain_quota or make it unlimited');
    }
    const limit = Number(allowance ?? 0);
    if (limit > 0 && Number(used ?? 0) >= limit) {
      throw outOfQuota('your account has used up its quota; ask an administrator to raise it');
    }
  }

  /** Adds the usage to the key, the user and the channel, and marks the channel healthy. */
  async charge(charge: Charge): Promise<void> {
    const quota = Math.max(0, Math.round(charge.usage.totalTokens));
    await this.redis.gwChargeUsage(
      keys.token(charge.caller.tokenId),
      keys.user(charge.caller.userId),
      keys.channel(charge.channelId),
      routingKeys.health(charge.channelId),
      String(quota),
      String(Math.max(0, Math.round(charge.responseTimeMs))),
      String(Math.floor(Date.now() / 1000)),
      charge.healthy === false ? '0' : '1',
    );
  }
}
