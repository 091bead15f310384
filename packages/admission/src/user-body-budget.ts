import { join } from 'node:path';
import { defineLuaScripts, luaScripts } from '@gateway/config';
import type { Redis } from '@gateway/queue';

const scripts = luaScripts(join(import.meta.dirname, 'commands'));

type Scripted = Redis & {
  gwBodyTake(key: string, holder: string, before: number, after: number, limit: number, ttlMs: number, now: number, force: string): Promise<number>;
};

/** A holder's field lives this long unless renewed: a process killed holding bytes frees them then. */
const FIELD_TTL_MS = 30_000;
const RENEW_EVERY_MS = FIELD_TTL_MS / 3;

const keyOf = (userId: number) => `gw:body:{${userId}}`;

/**
 * Bytes of one user's request bodies held in flight, by every gateway and batch worker together
 * (BODY_BUDGET_PER_USER_BYTES): in Redis, a field per process that holds some, so live requests
 * and batch lines share one budget. A batch's lines sat in Redis as job payloads outside it (235
 * MB for one batch, 484 MB for two, against 64 MiB, until Redis refused writes at maxmemory).
 * Each process writes what it holds as a whole number (never an increment), and renews it while it
 * holds any: a process that dies stops counting when its field expires.
 */
export class UserBodyBudget {
  private readonly redis: Scripted;
  private readonly holder: string;
  private readonly held = new Map<number, number>();
  /** Each user's takes under way, in order. */
  private readonly taking = new Map<number, Promise<void>>();
  private readonly timer: NodeJS.Timeout;

  constructor(redis: Redis, holder: string) {
    defineLuaScripts(redis, scripts);
    this.redis = redis as Scripted;
    this.holder = holder;
    this.timer = setInterval(() => this.renew(), RENEW_EVERY_MS);
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
   * One user's takes go one after the other, so each writes what this process holds for sure.
   */
  take(userId: number, bytes: number, limit: number, force = false): Promise<number | undefined> {
    const taken = (this.taking.get(userId) ?? Promise.resolve()).then(() => this.takeNow(userId, bytes, limit, force));
    const settled = taken.then(() => {}, () => {});
    this.taking.set(userId, settled);
    void settled.then(() => {
      if (this.taking.get(userId) === settled) this.taking.delete(userId);
    });
    return taken;
  }

  private async takeNow(userId: number, bytes: number, limit: number, force: boolean): Promise<number | undefined> {
    const before = this.heldBy(userId);
    let refused: number;
    try {
      refused = await this.redis.gwBodyTake(keyOf(userId), this.holder, before, before + bytes, limit, FIELD_TTL_MS, Date.now(), force ? '1' : '0');
    } catch (error) {
      this.write(userId); // it may have run: what this process holds, written whole
      throw error;
    }
    if (refused !== -1) return refused;
    const given = before - this.heldBy(userId);
    this.held.set(userId, this.heldBy(userId) + bytes);
    // Bytes given back while the take was under way were written before it: written whole again.
    if (given !== 0) this.write(userId);
    return undefined;
  }

  give(userId: number, bytes: number): void {
    if (bytes > 0) this.less(userId, bytes);
  }

  /** Stops renewing and gives back everything this process holds. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    const users = [...this.held.keys()];
    this.held.clear();
    await Promise.all(users.map((userId) => this.redis.hdel(keyOf(userId), this.holder).catch(() => {})));
  }

  private less(userId: number, bytes: number): void {
    const left = this.heldBy(userId) - bytes;
    if (left > 0) this.held.set(userId, left);
    else this.held.delete(userId);
    this.write(userId);
  }

  /** What this process holds for the user, written whole (a lost write is mended by the next). */
  private write(userId: number): void {
    const bytes = this.heldBy(userId);
    const key = keyOf(userId);
    const written = bytes > 0
      ? this.redis.multi().hset(key, this.holder, `${bytes}:${Date.now() + FIELD_TTL_MS}`).pexpire(key, FIELD_TTL_MS).exec()
      : this.redis.hdel(key, this.holder);
    written.catch(() => { /* Redis away: the next write or renewal writes the whole again */ });
  }

  private renew(): void {
    for (const userId of this.held.keys()) this.write(userId);
  }
}
