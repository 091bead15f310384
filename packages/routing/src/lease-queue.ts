import { clientCancelled, GatewayError, timedOut, type Channel } from '@gateway/contracts';
import type { ChannelLeases, Lease } from './channel-leases.ts';
import { FairOrder } from './fair-order.ts';

/** A channel to call, with the lease that allows it (none for a channel without a limit). */
export interface ChannelSlot {
  channel: Channel;
  lease?: Lease;
}

export interface LeaseWait {
  /** Aborted when nobody waits for the answer any more. */
  signal: AbortSignal;
  /** Epoch ms after which waiting is pointless. */
  deadline: number;
  /** Batch work waits behind every interactive request. Default false. */
  batch?: boolean;
  /**
   * Whose request it is: a channel's line is fair between users, then between each user's keys
   * (`FairOrder`). Requests without one share one tenant: first come, first served.
   */
  tenant?: { userId: number; tokenId: number };
  /** Awaits the wait for a lease, when the request has to wait, as time it is idle (`ModelRequest.idle`). */
  idle?: <T>(wait: Promise<T>) => Promise<T>;
}

export interface LeaseQueueOptions {
  /**
   * While requests wait for a channel, it is tried again when a release is announced, when its
   * first lease expires, and at the latest after this back-off (doubling up to `maxPollMs`),
   * which covers announcements lost while the subscriber reconnected. Default 250 ms.
   */
  pollMs?: number;
  /** Default 2 s. */
  maxPollMs?: number;
}

/** How `LeaseQueue.release` gave a lease back: to a request of this process waiting for it, or to Redis. */
export type Released = 'handed-over' | 'given-back';

/**
 * The requests of this process that wait for room on a channel. A request takes a free lease at
 * once when it can (`acquire`); otherwise it joins the waiting line of every channel it could use
 * and is served by whichever frees first.
 *
 * Each channel's line keeps these invariants, which are all a reader has to check:
 * 1. Order: waiters are kept in fair order (interactive before batch; inside each, round robin
 *    between users and their keys: `FairOrder`), and leases go to them in that order. A newcomer
 *    takes a lease directly only when nobody as urgent waits.
 * 2. One attempt at a time: at most one `tryAcquire` per channel is in flight in this process,
 *    and it asks for as many leases as requests wait, so a release costs one round trip however
 *    many wait. A wake-up during an attempt makes it run again once it ends.
 * 3. Nobody is forgotten: while anyone waits, either an attempt is in flight or one is
 *    scheduled: on a release announced (`hear`), when the channel's first lease expires, and at
 *    the latest after a back-off from `pollMs` doubling to `maxPollMs` (which covers
 *    announcements lost while the subscriber reconnected).
 * 4. Nothing leaks: a lease taken for a request that has meanwhile gone is released at once, and
 *    a line with nobody waiting has no timer and leaves the map.
 * 5. A freed slot is busy again at once: a lease this process is done with (`release`) goes
 *    straight to the first waiter of its line, with no round trip, unless another process has
 *    said lately that it waits for the channel too (its attempt took fewer leases than it asked
 *    for: `hearWanted`), or Redis may have let the lease run out (`ChannelLeases.surelyHeld`).
 *    Then the lease goes back to Redis and is announced, and every process's waiters try for
 *    it, so no process keeps a channel's slots to itself, nor calls on a slot it lost.
 * A waiter leaves every line when it is granted, aborted (499) or past its deadline (504).
 */
export class LeaseQueue {
  private readonly leases: ChannelLeases;
  private readonly lines = new Map<number, WaitingLine>();
  private readonly pollMs: number;
  private readonly maxPollMs: number;
  /** Until when (epoch ms) another process is known to wait for each channel (invariant 5). */
  private readonly contested = new Map<number, number>();
  /**
   * Until when every channel counts as contested: announcements may have been missed (forever
   * while the subscriber is away, `deaf`).
   */
  private allContestedUntil = 0;
  /**
   * How long a process's word that it waits holds: it tries again at least every `maxPollMs`
   * while it waits, and says so again each time it comes up short.
   */
  private readonly contestedMs: number;

  constructor(leases: ChannelLeases, options: LeaseQueueOptions = {}) {
    this.leases = leases;
    this.pollMs = options.pollMs ?? 250;
    this.maxPollMs = options.maxPollMs ?? 2000;
    this.contestedMs = 2 * this.maxPollMs + this.pollMs;
  }

  /**
   * Gives a lease back (invariant 5): to the first request of this process waiting for its
   * channel when no other process waits for it too, else to Redis, announced to every waiter.
   */
  async release(lease: Lease): Promise<Released> {
    if (!this.isContested(lease.channelId) && this.leases.surelyHeld(lease) && this.lines.get(lease.channelId)?.handOver(lease)) {
      return 'handed-over';
    }
    await this.leases.release(lease);
    return 'given-back';
  }

  /** A process found a channel full with requests waiting (`routingKeys.leaseWanted`'s message). */
  hearWanted(message: string): void {
    const [channelId, prefix] = message.split(' ');
    if (prefix === `${this.leases.owner}:`) return;
    this.contested.set(Number(channelId), Date.now() + this.contestedMs);
  }

  /** The subscriber is away: what other processes say is not heard until `wakeAll`. */
  deaf(): void {
    this.allContestedUntil = Number.POSITIVE_INFINITY;
  }

  /** Whether another process may wait for the channel too (invariant 5). */
  private isContested(channelId: number): boolean {
    const now = Date.now();
    if (this.allContestedUntil > now) return true;
    const until = this.contested.get(channelId);
    if (until === undefined) return false;
    if (until > now) return true;
    this.contested.delete(channelId);
    return false;
  }

  /**
   * The first channel of `order` (the choice order) with room, with its lease; channels with
   * max_concurrency 0 need no lease and cost no Redis call. When every channel is full, waits
   * for whichever frees first, up to the deadline (504) or the abort.
   */
  async acquire(order: readonly Channel[], wait: LeaseWait): Promise<ChannelSlot> {
    const batch = wait.batch ?? false;
    for (const channel of order) {
      const line = this.lines.get(channel.id);
      // The channel record this request brings (a newer table) reaches those already waiting.
      line?.see(channel);
      if (channel.max_concurrency <= 0) return { channel };
      if (line?.hasWaitersAsUrgentAs(batch)) continue;
      // Not announced when short: this request may yet run on the next channel.
      const { leases } = await this.leases.tryAcquire(channel.id, channel.max_concurrency, 1, false);
      if (leases[0]) return { channel, lease: leases[0] };
    }
    const waited = this.wait(order, wait);
    return wait.idle ? wait.idle(waited) : waited;
  }

  /** A lease was given back on this channel somewhere: its line tries again. */
  hear(channelId: number): void {
    this.lines.get(channelId)?.tryNow();
  }

  /**
   * Announcements may have been missed (the subscriber reconnected): every line tries again, and
   * every channel counts as contested for a while (another process may have said it waits).
   */
  wakeAll(): void {
    this.allContestedUntil = Date.now() + this.contestedMs;
    for (const line of this.lines.values()) line.tryNow();
  }

  /** Requests of this process waiting now (one waiting for two channels counts once). */
  get waiting(): number {
    const all = new Set<Waiter>();
    for (const line of this.lines.values()) for (const waiter of line.waiters) all.add(waiter);
    return all.size;
  }

  private wait(order: readonly Channel[], { signal, deadline, batch = false, tenant = NO_TENANT }: LeaseWait): Promise<ChannelSlot> {
    return new Promise<ChannelSlot>((resolve, reject) => {
      const lines: WaitingLine[] = [];
      const leave = () => {
        waiter.settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        for (const line of lines) line.remove(waiter);
      };
      const waiter: Waiter = {
        batch,
        userId: tenant.userId,
        tokenId: tenant.tokenId,
        settled: false,
        grant: (channelId, lease) => {
          const channel = order.find((c) => c.id === channelId);
          if (waiter.settled || !channel) return false;
          leave();
          resolve({ channel, lease });
          return true;
        },
      };
      const fail = (error: GatewayError) => {
        if (waiter.settled) return;
        leave();
        reject(error);
      };
      const onAbort = () => fail(clientCancelled());
      const timer = setTimeout(
        () => fail(timedOut('no channel had room for the request before its time-out')),
        Math.max(0, deadline - Date.now()),
      );
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      for (const channel of order) {
        if (waiter.settled) break; // granted by a line it has just joined
        let line = this.lines.get(channel.id);
        if (!line) {
          const created = new WaitingLine(channel, this.leases, this.pollMs, this.maxPollMs, () => {
            if (this.lines.get(channel.id) === created) this.lines.delete(channel.id);
          });
          this.lines.set(channel.id, (line = created));
        }
        lines.push(line);
        line.add(waiter, channel);
      }
    });
  }
}

const NO_TENANT = { userId: 0, tokenId: 0 };

interface Waiter {
  batch: boolean;
  userId: number;
  tokenId: number;
  settled: boolean;
  /** Hands the request a lease; false when it no longer wants one. */
  grant(channelId: number, lease: Lease | undefined): boolean;
}

/** The requests of this process waiting for one channel, and its attempts to take leases. */
class WaitingLine {
  /** In fair order (invariant 1). */
  readonly waiters = new FairOrder<Waiter>();
  private channel: Channel;
  private attempting = false;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private backoffMs: number;
  private readonly leases: ChannelLeases;
  private readonly pollMs: number;
  private readonly maxPollMs: number;
  private readonly onEmpty: () => void;

  constructor(channel: Channel, leases: ChannelLeases, pollMs: number, maxPollMs: number, onEmpty: () => void) {
    this.channel = channel;
    this.leases = leases;
    this.pollMs = pollMs;
    this.maxPollMs = maxPollMs;
    this.onEmpty = onEmpty;
    this.backoffMs = pollMs;
  }

  /** Whether a request as urgent as a newcomer of this class, or more, waits already. */
  hasWaitersAsUrgentAs(batch: boolean): boolean {
    return this.waiters.hasWaitingAsUrgentAs(batch);
  }

  /**
   * The newest channel record wins: the line goes by its limit from now on, and tries at once
   * when the limit changed (lifted to 0, everyone waiting goes).
   */
  see(channel: Channel): void {
    const changed = channel.max_concurrency !== this.channel.max_concurrency;
    this.channel = channel;
    if (changed) this.tryNow();
  }

  /** Joins the line at its fair place; the newest channel record wins. */
  add(waiter: Waiter, channel: Channel): void {
    this.channel = channel;
    const wasEmpty = this.waiters.length === 0;
    this.waiters.add(waiter);
    // A line already trying or scheduled serves the newcomer too; only an idle one starts now,
    // or again right after an attempt made for nobody.
    if (this.attempting) this.again ||= wasEmpty;
    else if (this.timer === undefined) this.tryNow();
  }

  remove(waiter: Waiter): void {
    if (!this.waiters.remove(waiter)) return;
    // An attempt in flight closes the line when it ends, so the line stays the channel's one
    // until then and a newcomer joins it rather than starting a second attempt (invariant 2).
    if (this.waiters.length === 0 && !this.attempting) this.close();
  }

  /** An attempt now, or right after the one in flight (invariant 2). */
  tryNow(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.attempting) this.again = true;
    else void this.attempt();
  }

  private async attempt(): Promise<void> {
    this.attempting = true;
    this.again = false;
    let retryInMs = this.backoffMs;
    try {
      retryInMs = await this.takeLeases();
    } catch {
      // Redis is unreachable: try again after the back-off.
      this.backoffMs = Math.min(this.backoffMs * 2, this.maxPollMs);
    } finally {
      this.attempting = false;
    }
    if (this.waiters.length === 0) return this.close();
    if (this.again) return this.tryNow();
    this.timer = setTimeout(() => this.tryNow(), retryInMs); // invariant 3
  }

  /** One round trip for as many leases as requests wait; returns when to try next. */
  private async takeLeases(): Promise<number> {
    const channel = this.channel;
    if (channel.max_concurrency <= 0) {
      // The limit was lifted while requests waited.
      for (const waiter of [...this.waiters]) waiter.grant(channel.id, undefined);
      return this.pollMs;
    }
    const attempt = await this.leases.tryAcquire(channel.id, channel.max_concurrency, this.waiters.length);
    for (const lease of attempt.leases) {
      if (!this.grantFirst(lease)) void this.leases.release(lease).catch(() => {}); // invariant 4
    }
    if (attempt.leases.length > 0) {
      this.backoffMs = this.pollMs;
      // Room left: whoever arrived meanwhile is served at once.
      if (attempt.free > 0) this.again = true;
      return this.pollMs;
    }
    const retryInMs = Math.min(this.backoffMs, attempt.expiresInMs + 1);
    this.backoffMs = Math.min(this.backoffMs * 2, this.maxPollMs);
    return retryInMs;
  }

  /**
   * A lease this process is done with, given to the first waiter that still wants one, when it
   * was taken at the channel's limit now (a lowered limit drains through Redis); false when
   * nobody here took it.
   */
  handOver(lease: Lease): boolean {
    if (this.waiters.length === 0 || lease.limit !== this.channel.max_concurrency) return false;
    const granted = this.grantFirst(lease);
    if (this.waiters.length === 0 && !this.attempting) this.close();
    return granted;
  }

  /** Gives the lease to the first waiter that still wants one; the line's turn moves past it. */
  private grantFirst(lease: Lease): boolean {
    for (let waiter = this.waiters.first(); waiter; waiter = this.waiters.first()) {
      // Its turn here: its tenant goes to the back of this line's round before it leaves every line.
      this.waiters.remove(waiter, true);
      if (waiter.grant(lease.channelId, lease)) return true;
    }
    return false;
  }

  private close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.onEmpty();
  }
}
