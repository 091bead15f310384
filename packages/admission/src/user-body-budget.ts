import { join } from 'node:path';
import { defineLuaScripts, luaScripts } from '@gateway/config';
import type { Redis } from '@gateway/queue';

const scripts = luaScripts(join(import.meta.dirname, 'commands'));

type Scripted = Redis & {
  gwBodyTake(key: string, holder: string, bytes: number, limit: number, ttlMs: number, now: number, force: string): Promise<number>;
  gwBodyGive(key: string, holder: string, bytes: number): Promise<number>;
};

/** A holder's bytes count this long unless renewed: a process killed holding bytes frees them then. */
const FIELD_TTL_MS = 30_000;
const RENEW_EVERY_MS = FIELD_TTL_MS / 3;

const keyOf = (userId: number) => `gw:body:{${userId}}`;

/**
 * Bytes of one user's request bodies held in flight, by every gateway and batch worker together
 * (BODY_BUDGET_PER_USER_BYTES): in Redis, a field per process that holds some, so live requests
 * and batch lines share one budget. A batch's lines sat in Redis as job payloads outside it (235
 * MB for one batch, 484 MB for two, against 64 MiB, until Redis refused writes at maxmemory).
 * A process renews its fields while it holds bytes (and writes its own count whole then, mending
 * a give lost to a Redis blip); one that dies stops counting when its time is up.
 */
export class UserBodyBudget {
  private readonly redis: Scripted;
  private readonly holder: string;
  /** What this process holds, per user, as Redis confirmed it. */
  private readonly held = new Map<number, number>();
  /** Takes and gives under way, per user: no whole count is written over them. */
  private readonly pending = new Map<number, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(redis: Redis, holder: string) {
    defineLuaScripts(redis, scripts);
    this.redis = redis as Scripted;
    this.holder = holder;
    this.timer = setInterval(() => void this.renew(), RENEW_EVERY_MS);
    this.timer.unref();
  }

  /** What this process holds for `userId`. */
  heldBy(userId: number): number {
    return this.held.get(userId) ?? 0;
  }

  /**
   * Takes `bytes` for the user unless every holder together would pass `limit`; resolves with
   * what they held then (refused), or undefined (taken). `force` takes whatever the limit: bytes
   * that are in Redis already (a batch's jobs followed after a takeover). Throws when Redis is away.
   */
  async take(userId: number, bytes: number, limit: number, force = false): Promise<number | undefined> {
    const refused = await this.counted(userId, () => this.redis.gwBodyTake(keyOf(userId), this.holder, bytes, limit, FIELD_TTL_MS, Date.now(), force ? '1' : '0'));
    if (refused !== -1) return refused;
    this.held.set(userId, this.heldBy(userId) + bytes);
    return undefined;
  }

  give(userId: number, bytes: number): void {
    if (bytes <= 0) return;
    const left = this.heldBy(userId) - bytes;
    if (left > 0) this.held.set(userId, left);
    else this.held.delete(userId);
    // Redis away: the renewal writes this process's count whole again.
    void this.counted(userId, () => this.redis.gwBodyGive(keyOf(userId), this.holder, bytes)).catch(() => {});
  }

  /** Stops renewing and gives back everything this process holds. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    const users = [...this.held.keys()];
    this.held.clear();
    await Promise.all(users.map((userId) => this.redis.hdel(keyOf(userId), this.holder, `${this.holder}:t`).catch(() => {})));
  }

  private async counted<T>(userId: number, command: () => Promise<T>): Promise<T> {
    this.pending.set(userId, (this.pending.get(userId) ?? 0) + 1);
    try {
      return await command();
    } finally {
      const left = this.pending.get(userId)! - 1;
      if (left > 0) this.pending.set(userId, left);
      else this.pending.delete(userId);
    }
  }

  private async renew(): Promise<void> {
    for (const [userId, bytes] of this.held) {
      const key = keyOf(userId);
      const until = Date.now() + FIELD_TTL_MS;
      const write = this.pending.has(userId)
        ? this.redis.multi().hset(key, `${this.holder}:t`, until).pexpire(key, FIELD_TTL_MS)
        : this.redis.multi().hset(key, this.holder, bytes, `${this.holder}:t`, until).pexpire(key, FIELD_TTL_MS);
      await write.exec().catch(() => { /* Redis away: renewed at the next round */ });
    }
  }
}
