import { GatewayError, clientCancelled, type Channel } from '@gateway/contracts';
import type { ChannelLeases, Lease } from './channel-leases.ts';

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
  /**
   * Lower is served first (BullMQ's convention: interactive work before batch work); requests
   * of equal priority first come, first served. Default 0.
   */
  priority?: number;
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

/**
 * The requests of this process that wait for room on a channel, by priority, then first come
 * first served: a newcomer never overtakes a request of this process already waiting for the
 * same channel with the same or a more urgent priority. One loop per full channel takes leases
 * for the waiting requests as releases are announced (`hear`), as many at once as requests
 * wait, so a release costs one round trip per process however many requests wait.
 */
export class LeaseQueue {
  private readonly leases: ChannelLeases;
  private readonly gates = new Map<number, ChannelGate>();
  private readonly pollMs: number;
  private readonly maxPollMs: number;

  constructor(leases: ChannelLeases, options: LeaseQueueOptions = {}) {
    this.leases = leases;
    this.pollMs = options.pollMs ?? 250;
    this.maxPollMs = options.maxPollMs ?? 2000;
  }

  /**
   * The first channel of `order` (the choice order) with room, with its lease; channels with
   * max_concurrency 0 need no lease and cost no Redis call. When every channel is full, waits
   * for whichever frees first, up to the deadline (504) or the abort.
   */
  async acquire(order: readonly Channel[], wait: LeaseWait): Promise<ChannelSlot> {
    const priority = wait.priority ?? 0;
    for (const channel of order) {
      if (channel.max_concurrency <= 0) return { channel };
      if (this.gates.get(channel.id)?.hasWaitersBefore(priority)) continue;
      const { leases } = await this.leases.tryAcquire(channel.id, channel.max_concurrency);
      if (leases[0]) return { channel, lease: leases[0] };
    }
    return this.wait(order, wait);
  }

  /** A lease was given back on this channel somewhere: the waiting requests try again. */
  hear(channelId: number): void {
    this.gates.get(channelId)?.wake();
  }

  /** Announcements may have been missed (the subscriber reconnected): every waiter tries again. */
  wakeAll(): void {
    for (const gate of this.gates.values()) gate.wake();
  }

  /** Requests of this process waiting now. */
  get waiting(): number {
    const all = new Set<Waiter>();
    for (const gate of this.gates.values()) for (const w of gate.inOrder()) all.add(w);
    return all.size;
  }

  private wait(order: readonly Channel[], { signal, deadline, priority = 0 }: LeaseWait): Promise<ChannelSlot> {
    return new Promise<ChannelSlot>((resolve, reject) => {
      const gates: ChannelGate[] = [];
      const waiter: Waiter = {
        priority,
        settled: false,
        grant: (channelId, lease) => {
          const channel = order.find((c) => c.id === channelId);
          if (waiter.settled || !channel) return false;
          settle();
          resolve({ channel, lease });
          return true;
        },
      };
      const fail = (error: GatewayError) => {
        if (waiter.settled) return;
        settle();
        reject(error);
      };
      const onAbort = () => fail(clientCancelled());
      const timer = setTimeout(
        () => fail(new GatewayError({ status: 504, code: 'timeout', message: 'no channel had room for the request before its time-out' })),
        Math.max(0, deadline - Date.now()),
      );
      const settle = () => {
        waiter.settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        for (const gate of gates) gate.remove(waiter);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      for (const channel of order) {
        let gate = this.gates.get(channel.id);
        if (!gate) {
          gate = new ChannelGate(this.leases, this.pollMs, this.maxPollMs, () => this.gates.delete(channel.id));
          this.gates.set(channel.id, gate);
        }
        gates.push(gate);
        gate.add(waiter, channel);
      }
    });
  }
}

interface Waiter {
  priority: number;
  settled: boolean;
  /** Hands the request a lease; false when it no longer wants one. */
  grant(channelId: number, lease: Lease | undefined): boolean;
}

/** The waiting requests of one channel and the loop that takes leases for them. */
class ChannelGate {
  /** Waiting requests by priority, each in arrival order. */
  private readonly byPriority = new Map<number, Set<Waiter>>();
  private size = 0;
  private channel: Channel | undefined;
  private pumping = false;
  private woken = false;
  private endSleep: (() => void) | undefined;
  private readonly leases: ChannelLeases;
  private readonly pollMs: number;
  private readonly maxPollMs: number;
  private readonly onIdle: () => void;

  constructor(leases: ChannelLeases, pollMs: number, maxPollMs: number, onIdle: () => void) {
    this.leases = leases;
    this.pollMs = pollMs;
    this.maxPollMs = maxPollMs;
    this.onIdle = onIdle;
  }

  /** Whether a request as urgent as `priority`, or more, waits already. */
  hasWaitersBefore(priority: number): boolean {
    for (const p of this.byPriority.keys()) if (p <= priority) return true;
    return false;
  }

  /** The waiting requests in the order they are served. */
  *inOrder(): Generator<Waiter> {
    const priorities = [...this.byPriority.keys()].sort((a, b) => a - b);
    for (const p of priorities) yield* this.byPriority.get(p)!;
  }

  add(waiter: Waiter, channel: Channel): void {
    this.channel = channel;
    let bucket = this.byPriority.get(waiter.priority);
    if (!bucket) this.byPriority.set(waiter.priority, (bucket = new Set()));
    if (!bucket.has(waiter)) this.size++;
    bucket.add(waiter);
    if (!this.pumping) void this.pump();
  }

  remove(waiter: Waiter): void {
    const bucket = this.byPriority.get(waiter.priority);
    if (!bucket?.delete(waiter)) return;
    this.size--;
    if (bucket.size === 0) this.byPriority.delete(waiter.priority);
    if (this.size === 0) this.wake();
  }

  wake(): void {
    if (this.endSleep) this.endSleep();
    else this.woken = true;
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    let backoff = this.pollMs;
    try {
      while (this.size > 0) {
        const channel = this.channel!;
        this.woken = false;
        let pause = backoff;
        if (channel.max_concurrency <= 0) {
          // The limit was lifted while requests waited.
          for (const waiter of [...this.inOrder()]) waiter.grant(channel.id, undefined);
          break;
        }
        try {
          // As many leases as requests wait: releases announced while this loop was busy are
          // caught up with in one round trip.
          const attempt = await this.leases.tryAcquire(channel.id, channel.max_concurrency, this.size);
          if (attempt.leases.length > 0) {
            for (const lease of attempt.leases) {
              if (!this.grantFirst(lease)) void this.leases.release(lease).catch(() => {});
            }
            backoff = this.pollMs;
            if (attempt.free > 0) continue;
            pause = backoff;
          } else {
            pause = Math.min(backoff, attempt.expiresInMs + 1);
          }
        } catch {
          // Redis is unreachable: try again after the back-off.
        }
        if (this.size === 0) break;
        if (!this.woken) await this.sleep(pause);
        backoff = Math.min(backoff * 2, this.maxPollMs);
      }
    } finally {
      this.pumping = false;
      if (this.size === 0) this.onIdle();
      // A waiter added while the loop was ending must not be left without one.
      else void this.pump();
    }
  }

  private grantFirst(lease: Lease): boolean {
    for (const waiter of this.inOrder()) {
      if (waiter.grant(lease.channelId, lease)) return true;
    }
    return false;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.endSleep = () => {
        this.endSleep = undefined;
        done();
      };
    }).finally(() => {
      this.endSleep = undefined;
    });
  }
}
