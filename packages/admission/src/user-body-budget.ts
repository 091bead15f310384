import { join } from 'node:path';
import { defineLuaScripts, luaScripts } from '@gateway/config';
import type { Redis } from '@gateway/queue';

const scripts = luaScripts(join(import.meta.dirname, 'commands'));

type Scripted = Redis & {
  gwBodyLease(key: string, holder: string, used: number, bytes: number, slice: number, limit: number, ttlMs: number, now: number, force: string): Promise<[number, number]>;
};

export interface UserBodyBudgetOptions {
  /** How long a lease counts in Redis unless renewed: a process killed holding one frees it then. Default 30 s. */
  leaseTtlMs?: number;
  /** A lease with no take this long is given back down to what is in use. Default 1 s. */
  idleMs?: number;
}

/** Beyond what a take needs, a lease asks for this share of the limit (less near the limit). */
const SLICE_OF_LIMIT = 1 / 16;

const keyOf = (userId: number) => `gw:body:{${userId}}`;

/** One user's lease of this process: what Redis counts for it, and what of that is in use. */
interface Lease {
  leased: number;
  used: number;
  lastTakeAt: number;
  renewedAt: number;
  /** A lease asked of Redis, under way: takes wait for it rather than ask too. */
  asking?: Promise<unknown>;
}

/**
 * Bytes of one user's request bodies held in flight, by every gateway and batch worker together
 * (BODY_BUDGET_PER_USER_BYTES): in Redis, a field per process, so live requests and batch lines
 * share one budget. A batch's lines sat in Redis as job payloads outside it (235 MB for one
 * batch, 484 MB for two, against 64 MiB, until Redis refused writes at maxmemory).
 *
 * Each process leases a slice of the user's budget and serves takes from it without a Redis
 * round trip (an awaited take and a give on every request cost 8.7 Redis commands a request);
 * only a take its lease cannot hold asks Redis, which grants what the take needs plus a slice
 * (a quarter of the room left at most, so near the limit a lease is what is in use). Gives are
 * local; a lease with no take for `idleMs` is given back down to what is in use. Every lease
 * together stays within the limit, so the bound holds across processes. A process renews its
 * fields while it leases (writing its lease whole, mending a write lost to a Redis blip); one
 * that dies stops counting when its time is up.
 */
export class UserBodyBudget {
  private readonly redis: Scripted;
  private readonly holder: string;
  private readonly ttlMs: number;
  private readonly idleMs: number;
  private readonly leases = new Map<number, Lease>();
  private readonly timer: NodeJS.Timeout;

  constructor(redis: Redis, holder: string, options: UserBodyBudgetOptions = {}) {
    defineLuaScripts(redis, scripts);
    this.redis = redis as Scripted;
    this.holder = holder;
    this.ttlMs = options.leaseTtlMs ?? 30_000;
    this.idleMs = options.idleMs ?? 1_000;
    this.timer = setInterval(() => this.sweep(), Math.min(this.idleMs, this.ttlMs / 3) / 2);
    this.timer.unref();
  }

  /** What this process holds in use for `userId`. */
  heldBy(userId: number): number {
    return this.leases.get(userId)?.used ?? 0;
  }

  /** What this process leases for `userId` (what Redis counts for it): at least what it holds. */
  leasedBy(userId: number): number {
    return this.leases.get(userId)?.leased ?? 0;
  }

  /**
   * Takes `bytes` for the user unless every holder together would pass `limit`; resolves with
   * what they held then (refused), or undefined (taken). `force` takes whatever the limit: bytes
   * that are in Redis already (a batch's jobs followed after a takeover). Throws when Redis is away.
   */
  async take(userId: number, bytes: number, limit: number, force = false): Promise<number | undefined> {
    let lease = this.leases.get(userId);
    if (!lease) {
      lease = { leased: 0, used: 0, lastTakeAt: 0, renewedAt: 0 };
      this.leases.set(userId, lease);
    }
    lease.lastTakeAt = Date.now();
    while (lease.asking) await lease.asking;
    if (lease.used + bytes <= lease.leased) {
      lease.used += bytes;
      return undefined;
    }
    const asked = this.ask(userId, lease, bytes, limit, force);
    const asking = asked.catch(() => {});
    lease.asking = asking;
    try {
      return await asked;
    } finally {
      if (lease.asking === asking) lease.asking = undefined;
    }
  }

  /** Gives `bytes` back to this process's lease: Redis hears of it when the lease goes idle. */
  give(userId: number, bytes: number): void {
    const lease = this.leases.get(userId);
    if (lease && bytes > 0) lease.used = Math.max(0, lease.used - bytes);
  }

  /** Stops renewing and gives back every lease of this process. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    const users = [...this.leases.keys()];
    this.leases.clear();
    await Promise.all(users.map((userId) => this.redis.hdel(keyOf(userId), this.holder, `${this.holder}:t`).catch(() => {})));
  }

  private async ask(userId: number, lease: Lease, bytes: number, limit: number, force: boolean): Promise<number | undefined> {
    const now = Date.now();
    const [taken, value] = await this.redis.gwBodyLease(keyOf(userId), this.holder, lease.used, bytes, Math.floor(limit * SLICE_OF_LIMIT), limit, this.ttlMs, now, force ? '1' : '0');
    if (taken !== 1) return value;
    // Gives while it was asked only lowered what is in use: the new lease holds it and the take.
    lease.leased = value;
    lease.used += bytes;
    lease.renewedAt = now;
    return undefined;
  }

  /** Gives idle leases back down to what is in use, and renews the others before their time is up. */
  private sweep(): void {
    const now = Date.now();
    for (const [userId, lease] of this.leases) {
      if (lease.asking) continue;
      const key = keyOf(userId);
      const idle = now - lease.lastTakeAt >= this.idleMs;
      if (idle && lease.used === 0) {
        this.leases.delete(userId);
        if (lease.leased > 0) void this.redis.hdel(key, this.holder, `${this.holder}:t`).catch(() => { /* Redis away: the field's time runs out */ });
        continue;
      }
      if (idle && lease.leased > lease.used) lease.leased = lease.used;
      else if (lease.leased === 0 || now - lease.renewedAt < this.ttlMs / 3) continue;
      lease.renewedAt = now;
      void this.redis.multi().hset(key, this.holder, lease.leased, `${this.holder}:t`, now + this.ttlMs).pexpire(key, this.ttlMs).exec()
        .catch(() => { /* Redis away: renewed at the next round */ });
    }
  }
}
