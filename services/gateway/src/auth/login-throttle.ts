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
 * address, each in a window that starts at its first failure. Past either limit a sign-in is
 * refused with 429 and `Retry-After` before its password is even checked, right or wrong.
 */
export class LoginThrottle {
  private readonly redis: Redis;
  private readonly options: LoginThrottleOptions;

  constructor(redis: Redis, options: LoginThrottleOptions) {
    this.redis = redis;
    this.options = options;
  }

  /** Throws 429 when the username or the address has failed too often in its window. */
  async check(username: string, address: string): Promise<void> {
    const [user, addr] = await this.redis.mget(userKey(username), addressKey(address));
    const blocked = Number(user ?? 0) >= this.options.failuresPerUser ? userKey(username)
      : Number(addr ?? 0) >= this.options.failuresPerAddress ? addressKey(address) : undefined;
    if (!blocked) return;
    const ttl = await this.redis.pttl(blocked);
    throw new GatewayError({
      status: 429, code: 'rate_limited', message: 'too many failed sign-ins; wait before trying again',
      retryAfter: Math.max(1, Math.ceil((ttl > 0 ? ttl : this.options.windowSeconds * 1000) / 1000)),
    });
  }

  async failed(username: string, address: string): Promise<void> {
    const window = String(this.options.windowSeconds);
    await this.redis.multi()
      .incr(userKey(username)).expire(userKey(username), window, 'NX')
      .incr(addressKey(address)).expire(addressKey(address), window, 'NX')
      .exec();
  }

  /** A right password clears the username's count (not the address's: it may be guessing other names). */
  async succeeded(username: string): Promise<void> {
    await this.redis.del(userKey(username));
  }
}
