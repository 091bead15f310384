import { randomUUID } from 'node:crypto';
import { defineLuaScripts, type RedisClient as Redis } from '@gateway/config';
import { routingKeys } from './routing-keys.ts';
import { routingScripts } from './scripts.ts';

/** The right to have one request in flight to a channel; given back with `ChannelLeases.release`. */
export interface Lease {
  readonly id: string;
  readonly channelId: number;
  /** The channel's max_concurrency when the lease was taken. */
  readonly limit: number;
}

/** What an attempt to take leases got. */
export interface LeaseAttempt {
  /** The leases taken: as many as asked for, or as many as were free. */
  leases: Lease[];
  /** Leases still free on the channel afterwards. */
  free: number;
  /** When none was free: milliseconds until the channel's first lease expires unless renewed. */
  expiresInMs: number;
}

export interface ChannelLeasesOptions {
  /**
   * How long a lease lives unless renewed. The process renews its leases every third of it
   * while their calls run, so only a crashed process's leases run out: this bounds how long a
   * crash keeps a channel's capacity. Default 15 s.
   */
  ttlMs?: number;
}

type Scripted = Redis & {
  gwAcquireLeases(key: string, limit: number, ttlMs: number, count: number, prefix: string, first: number, channelId: number, notify: string): Promise<[number, number, number]>;
  gwReleaseLease(key: string, id: string, limit: number, channelId: number, notify: string): Promise<number>;
  gwRenewLeases(key: string, ttlMs: number, ...ids: string[]): Promise<string[]>;
};

/**
 * Per-channel concurrency leases shared by every worker process: a channel's leases are a
 * sorted set of lease ids scored by expiry, so a channel never has more calls in flight than
 * its `max_concurrency`, whichever process makes them. Expired leases (of a process that
 * crashed) are swept by the next acquire. A release on a full channel is announced on
 * `routingKeys.leaseFreed` so that waiting processes try again at once.
 */
export class ChannelLeases {
  readonly ttlMs: number;
  private readonly redis: Scripted;
  /** This process's lease ids begin with it (and a colon). */
  readonly owner = randomUUID().slice(0, 8);
  private sequence = 0;
  /**
   * Leases this process holds, renewed until released, each with the time (epoch ms, by this
   * process's clock when it asked) until which Redis keeps it at least: set when it is taken,
   * moved on by each renewal. A lease a renewal finds gone (it ran out in a stall, or a failover
   * lost it) is no longer held: its slot may be another's already.
   */
  private readonly held = new Map<string, { lease: Lease; until: number }>();
  private readonly renewer: NodeJS.Timeout;
  /** Told when renewing found leases gone (expired while this process stalled, or lost in a failover). */
  onLost?: (channelId: number, count: number) => void;

  constructor(redis: Redis, options: ChannelLeasesOptions = {}) {
    defineLuaScripts(redis, routingScripts);
    this.redis = redis as Scripted;
    this.ttlMs = options.ttlMs ?? 15_000;
    this.renewer = setInterval(() => this.renew(), Math.max(100, Math.floor(this.ttlMs / 3)));
    this.renewer.unref();
  }

  /**
   * Takes up to `count` leases on the channel, as many as keep it within `limit`; never waits.
   * One round trip however many, so a process with many waiting requests catches up at once.
   * Taking fewer than `count` is announced on `routingKeys.leaseWanted` when `waiting` (the
   * requests asked for wait for this channel, not for whichever of several has room).
   */
  async tryAcquire(channelId: number, limit: number, count = 1, waiting = true): Promise<LeaseAttempt> {
    const first = this.sequence + 1;
    this.sequence += count;
    const asked = Date.now();
    const [taken, free, expiresInMs] = await this.redis.gwAcquireLeases(
      routingKeys.leases(channelId), limit, this.ttlMs, count, `${this.owner}:`, first, channelId, waiting ? routingKeys.leaseWanted : '',
    );
    const leases: Lease[] = [];
    for (let i = 0; i < taken; i++) {
      const lease: Lease = { id: `${this.owner}:${first + i}`, channelId, limit };
      this.held.set(lease.id, { lease, until: asked + this.ttlMs });
      leases.push(lease);
    }
    return { leases, free, expiresInMs: Math.max(0, expiresInMs) };
  }

  /** Gives a lease back; a lease that cannot be given back (Redis away) runs out by itself. */
  async release(lease: Lease): Promise<void> {
    if (!this.held.delete(lease.id)) return;
    await this.redis.gwReleaseLease(routingKeys.leases(lease.channelId), lease.id, lease.limit, lease.channelId, routingKeys.leaseFreed);
  }

  /**
   * Whether Redis surely keeps the lease for a while yet (a third of its TTL), so that it may go
   * to another request of this process without a round trip (`LeaseQueue.release`). A lease that
   * ran out while the process stalled, whose slot another process may have taken meanwhile, is
   * not: it goes back to Redis.
   */
  surelyHeld(lease: Lease): boolean {
    const held = this.held.get(lease.id);
    return held !== undefined && held.until - Date.now() > this.ttlMs / 3;
  }

  /** Leases held by this process now. */
  get heldCount(): number {
    return this.held.size;
  }

  close(): void {
    clearInterval(this.renewer);
  }

  private renew(): void {
    if (this.held.size === 0) return;
    const byChannel = new Map<number, string[]>();
    for (const { lease } of this.held.values()) {
      const ids = byChannel.get(lease.channelId);
      if (ids) ids.push(lease.id);
      else byChannel.set(lease.channelId, [lease.id]);
    }
    const asked = Date.now();
    for (const [channelId, ids] of byChannel) {
      this.redis.gwRenewLeases(routingKeys.leases(channelId), this.ttlMs, ...ids).then(
        (lost) => {
          for (const id of lost) this.held.delete(id);
          for (const id of ids) {
            const held = this.held.get(id);
            if (held) held.until = asked + this.ttlMs;
          }
          if (lost.length > 0) this.onLost?.(channelId, lost.length);
        },
        () => { /* the next round tries again; the ttl leaves two more */ },
      );
    }
  }
}
