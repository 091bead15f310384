import type { RedisClient as Redis } from '@gateway/config';
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

  /** A new session's cookie value, and the digest under which it is kept (made by the gateway). */
  static issue(): { session: string; hash: string } {
    const session = randomBytes(32).toString('base64url');
    return { session, hash: sha256(session) };
  }

  /** Opens the session with this digest for the user's current credentials: a new password (or a disabled user) ends it. */
  async open(user: { id: number; session_epoch: number }, hash: string, ttlSeconds: number): Promise<void> {
    await this.redis.set(sessionKey(hash), `${user.id}:${user.session_epoch}`, 'EX', ttlSeconds);
  }

  /** Whose session it is, and under which credentials (compare `epoch` with the user's `session_epoch`). */
  async userOf(token: string): Promise<{ userId: number; epoch: number } | null> {
    const value = await this.redis.get(sessionKey(sha256(token)));
    if (!value) return null;
    const [id, epoch] = value.split(':');
    return { userId: Number(id), epoch: Number(epoch ?? 0) };
  }

  async delete(hash: string): Promise<void> {
    await this.redis.del(sessionKey(hash));
  }
}
