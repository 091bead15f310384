import { rateLimited } from '@gateway/contracts';

/**
 * At most `max` of one kind of work per user at once on this gateway (reads of the request log,
 * file uploads): past it, a 429 that names the limit. Work that holds a database connection
 * while a client is slow to send or to be answered must not let one user take every connection
 * of a pool that other tenants' requests share.
 */
export class PerUserLimit {
  private readonly inFlight = new Map<number, number>();
  private readonly max: number;
  private readonly what: string;

  constructor(max: number, what: string) {
    this.max = max;
    this.what = what;
  }

  async run<T>(userId: number, work: () => Promise<T>): Promise<T> {
    const now = this.inFlight.get(userId) ?? 0;
    if (now >= this.max) throw rateLimited(`this user already has ${this.max} ${this.what} running; retry when one has ended`, 1);
    this.inFlight.set(userId, now + 1);
    try {
      return await work();
    } finally {
      const left = this.inFlight.get(userId)! - 1;
      if (left === 0) this.inFlight.delete(userId);
      else this.inFlight.set(userId, left);
    }
  }
}
