import { GatewayError, usernameKey } from '@gateway/contracts';
import type { Redis } from '@gateway/queue';

export interface LoginThrottleOptions {
  /** Failures for one username, and from one client address, before they must wait. */
  failuresPerUser: number;
  failuresPerAddress: number;
  /** The window the failures are counted in, from the first one. */
  windowSeconds: number;
}

const userKey = (username: string) => `gw:login-fail:user:${usernameKey(username)}`;
const addressKey = (address: string) => `gw:login-fail:addr:${address}`;

/**
 * Failed sign-ins, counted in Redis (so every gateway sees them) per username and per client
 * address, each in a window that starts at its first attempt. Past either limit a sign-in is
 * refused with 429 and `Retry-After` before its password is even checked, right or wrong.
 */
export class LoginThrottle {
  private readonly redis: Redis;
  private readonly options: LoginThrottleOptions;

  constructor(redis: Redis, options: LoginThrottleOptions) {
    this.redis = redis;
    this.options = options;
  }

  /**
   * Counts a sign-in attempt before its password is checked, so that attempts made in parallel
   * count at once; past either limit, 429 with the time left in the window. A right password
   * then takes its attempt back (`succeeded`); a wrong one leaves it counted.
   */
  async attempt(username: string, address: string): Promise<void> {
    const window = String(this.options.windowSeconds);
    const [user, addr] = [userKey(username), addressKey(address)];
    // One MULTI per key: on a Redis Cluster the two keys live in different slots.
    const count = async (key: string) => Number((await this.redis.multi().incr(key).expire(key, window, 'NX').exec())?.[0]?.[1] ?? 0);
    const [userCount, addressCount] = await Promise.all([count(user), count(addr)]);
    const blocked = userCount > this.options.failuresPerUser ? user : addressCount > this.options.failuresPerAddress ? addr : undefined;
    if (!blocked) return;
    const ttl = await this.redis.pttl(blocked);
    throw new GatewayError({
      status: 429, code: 'rate_limited', message: 'too many failed sign-ins; wait before trying again',
      retryAfter: Math.max(1, Math.ceil((ttl > 0 ? ttl : this.options.windowSeconds * 1000) / 1000)),
    });
  }

  /** A right password clears the username's count and takes its attempt back from the address's. */
  async succeeded(username: string, address: string): Promise<void> {
    await Promise.all([this.redis.del(userKey(username)), this.redis.decr(addressKey(address))]);
  }
}
