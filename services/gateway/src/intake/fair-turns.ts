/**
 * Fair turns at the gateway's own event loop. A burst of thousands of requests arrives in a few
 * event-loop turns, and each then costs the loop its routing, authentication, body parse,
 * validation, admission and enqueue; another user's request read in the same turns waits
 * behind all of them before the fair shares of the queue and of the channel (which come after)
 * can put it first. Here requests take turns: a few start per loop turn, round robin between
 * their owners, so one owner's thousand wait behind another owner's one, and the loop reads its
 * sockets (and the answers of Redis) again between rounds.
 *
 * The gateway takes turns twice: by credential as each request is read, before Fastify routes it
 * (request-turns.ts), and by user once its key is known, before its body is read (model-relay.ts).
 *
 * While nobody waits, a request starts at once: this costs a counter and one setImmediate a
 * loop turn, nothing per request.
 */

/** Requests that start per loop turn before the rest wait for the next round. */
const PER_ROUND = 16;

export class FairTurns<K = number> {
  /** Owners with requests waiting, in round-robin order, each with its waiters in arrival order. */
  private readonly waiting = new Map<K, (() => void)[]>();
  private startedThisRound = 0;
  private roundScheduled = false;
  private readonly perRound: number;

  constructor(perRound = PER_ROUND) {
    this.perRound = perRound;
  }

  /** Runs `start` now while the loop is not busy (true), or in the owner's turn of a later round (false). */
  enter(owner: K, start: () => void): boolean {
    if (!this.startsNow()) {
      this.wait(owner, start);
      return false;
    }
    start();
    return true;
  }

  /** Resolves when the owner's request may start: at once (undefined) while the loop is not busy. */
  take(owner: K): Promise<void> | undefined {
    if (this.startsNow()) return undefined;
    return new Promise<void>((resolve) => this.wait(owner, resolve));
  }

  /** Starts every waiting request now, in turn order (a gateway beginning its shutdown). */
  startAll(): void {
    while (this.waiting.size > 0) {
      for (const [owner, queue] of this.waiting) {
        const start = queue.shift()!;
        if (queue.length === 0) this.waiting.delete(owner);
        start();
      }
    }
  }

  /** Requests waiting for their turn (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const queue of this.waiting.values()) n += queue.length;
    return n;
  }

  /** Whether a request arriving now starts at once: nobody waits and the round has room. */
  private startsNow(): boolean {
    this.scheduleRound();
    if (this.waiting.size > 0 || this.startedThisRound >= this.perRound) return false;
    this.startedThisRound++;
    return true;
  }

  private wait(owner: K, start: () => void): void {
    const queue = this.waiting.get(owner);
    if (queue) queue.push(start);
    else this.waiting.set(owner, [start]);
  }

  private scheduleRound(): void {
    if (this.roundScheduled) return;
    this.roundScheduled = true;
    setImmediate(() => this.round());
  }

  /** A new loop turn: up to `perRound` waiters start, one per owner in turn. */
  private round(): void {
    this.roundScheduled = false;
    this.startedThisRound = 0;
    while (this.startedThisRound < this.perRound && this.waiting.size > 0) {
      const [owner, queue] = this.waiting.entries().next().value!;
      const start = queue.shift()!;
      this.startedThisRound++;
      // An owner with more waiting goes to the back of the ring: the next owner is served next.
      this.waiting.delete(owner);
      if (queue.length > 0) this.waiting.set(owner, queue);
      start();
    }
    if (this.waiting.size > 0) this.scheduleRound();
  }
}
