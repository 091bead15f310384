import type { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { sha256 } from './secrets.ts';

const sessionKey = (hash: string) => `gw:session:${hash}`;

/**
 * Short-lived dashboard sessions: a random token in an HttpOnly cookie, stored only as its
 * hash, expiring by itself.
 */
export class SessionStore {
  private readonly redis: Redis;
  constructor(redis: Redis) {
    this.redis = redis;
  }

  async create(userId: number, ttlSeconds: number): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    await this.redis.set(sessionKey(sha256(token)), String(userId), 'EX', ttlSeconds);
    return token;
  }

  async userOf(token: string): Promise<number | null> {
    const id = await this.redis.get(sessionKey(sha256(token)));
    return id ? Number(id) : null;
  }

  async delete(token: string): Promise<void> {
    await this.redis.del(sessionKey(sha256(token)));
  }
}
