import { join } from 'node:path';
import { defineLuaScripts, luaScripts } from '@gateway/config';
import type { Redis } from '@gateway/queue';
import { rateLimited } from '@gateway/contracts';

/** `gwKeyRateLimit`, the sliding-window count, from `commands/`. */
const scripts = luaScripts(join(import.meta.dirname, 'commands'));

type Scripted = Redis & { gwKeyRateLimit(current: string, previous: string, limit: number, weight: string): Promise<number> };

/**
 * Requests per minute per API key, counted in Redis so every gateway instance shares the count.
 * A sliding window approximated from two fixed one-minute windows: the previous minute's count
 * weighted by how much of it still lies inside the last 60 s, plus this minute's. A refused
 * request is not counted.
 */
export class KeyRateLimit {
  private readonly redis: Scripted;

  constructor(redis: Redis) {
    defineLuaScripts(redis, scripts);
    this.redis = redis as Scripted;
  }

  /** Throws a 429 with Retry-After when the key is over `rpmLimit`; 0 means no limit. */
  check(tokenId: number, rpmLimit: number, now = Date.now()): Promise<void> {
    return this.count(String(tokenId), rpmLimit, 'this API key', now);
  }

  /** The same for all the keys of a user together. */
  checkUser(userId: number, rpmLimit: number, now = Date.now()): Promise<void> {
    return this.count(`user:${userId}`, rpmLimit, 'your account', now);
  }

  /** The same for a user's changes through the management API (`perMinute` of them). */
  checkChanges(userId: number, perMinute: number, now = Date.now()): Promise<void> {
    return this.count(`changes:${userId}`, perMinute, 'your changes through the management API', now, 'changes');
  }

  private async count(scope: string, rpmLimit: number, whose: string, now: number, what = 'requests'): Promise<void> {
    if (!rpmLimit) return;
    const minute = Math.floor(now / 60_000);
    const elapsed = (now % 60_000) / 60_000;
    const refused = await this.redis.gwKeyRateLimit(
      // Both minutes of one key in one Redis Cluster slot (the hash tag).
      `gw:rpm:{${scope}}:${minute}`, `gw:rpm:{${scope}}:${minute - 1}`, rpmLimit, (1 - elapsed).toFixed(4),
    );
    if (refused) {
      throw rateLimited(
        `rate limit reached for ${whose}: ${rpmLimit} ${what} per minute`,
        Math.max(1, Math.ceil(((1 - elapsed) * 60_000) / Math.max(1, rpmLimit) / 1000)),
      );
    }
  }
}
