/**
 * Fair turns at the gateway's own event loop. A burst of thousands of requests arrives in a few
 * event-loop turns, and each then costs the loop its body's parse, validation, admission and
 * enqueue; another tenant's request read in the same turns waits behind all of them before the
 * fair shares of the queue and of the channel (which come after) can put it first. Here a request
 * takes its turn once its key is known and before its body is read: a few start per loop turn,
 * round robin between users, so one user's thousand wait behind another user's one, and the loop
 * reads its sockets again between rounds.
 *
 * While nobody waits, a request starts at once: this costs a counter and one setImmediate a
 * loop turn, nothing per request.
 */

/** Requests that start per loop turn before the rest wait for the next round. */
const PER_ROUND = 16;

export class FairTurns {
  /** Users with requests waiting, in round-robin order, each with its waiters in arrival order. */
  private readonly waiting = new Map<number, (() => void)[]>();
  private startedThisRound = 0;
  private roundScheduled = false;
  private readonly perRound: number;

  constructor(perRound = PER_ROUND) {
    this.perRound = perRound;
  }

  /** Resolves when the user's request may start: at once (undefined) while the loop is not busy. */
  take(userId: number): Promise<void> | undefined {
    this.scheduleRound();
    if (this.waiting.size === 0 && this.startedThisRound < this.perRound) {
      this.startedThisRound++;
      return undefined;
    }
    const { promise, resolve } = Promise.withResolvers<void>();
    const queue = this.waiting.get(userId);
    if (queue) queue.push(resolve);
    else this.waiting.set(userId, [resolve]);
    return promise;
  }

  /** Requests waiting for their turn (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const queue of this.waiting.values()) n += queue.length;
    return n;
  }

  private scheduleRound(): void {
    if (this.roundScheduled) return;
    this.roundScheduled = true;
    setImmediate(() => this.round());
  }

  /** A new loop turn: up to `perRound` waiters start, one per user in turn. */
  private round(): void {
    this.roundScheduled = false;
    this.startedThisRound = 0;
    while (this.startedThisRound < this.perRound && this.waiting.size > 0) {
      const [userId, queue] = this.waiting.entries().next().value!;
      queue.shift()!();
      this.startedThisRound++;
      // A user with more waiting goes to the back of the ring: the next user is served next.
      this.waiting.delete(userId);
      if (queue.length > 0) this.waiting.set(userId, queue);
    }
    if (this.waiting.size > 0) this.scheduleRound();
  }
}
