import { rateLimited } from '@gateway/contracts';

/**
 * At most `max` of one kind of work per user at once on this gateway (reads of the request log,
 * file uploads and downloads, reads of files and batches): past it, a 429 that names the limit.
 * Work that holds a database connection, or memory, while a client is slow to send or to be
 * answered must not let one user take every connection of a pool that other users' requests
 * share, nor the gateway's memory.
 */
export class PerUserLimit {
  private readonly inFlight = new Map<number | string, number>();
  private readonly max: number;
  private readonly what: string;
  private readonly whose: string;

  /** `whose` names what is counted in the 429: the user, unless keyed by something else (a response's id). */
  constructor(max: number, what: string, whose = 'this user') {
    this.max = max;
    this.what = what;
    this.whose = whose;
  }

  async run<T>(userId: number | string, work: () => Promise<T>): Promise<T> {
    const release = this.take(userId);
    try {
      return await work();
    } finally {
      release();
    }
  }

  /**
   * Takes one of the user's places (429 when none is left) until the returned release is called,
   * for work that outlasts a handler (a download, until its client has it all or is gone). A
   * second call of the release gives back nothing more.
   */
  take(userId: number | string): () => void {
    const now = this.inFlight.get(userId) ?? 0;
    if (now >= this.max) throw rateLimited(`${this.whose} already has ${this.max} ${this.what} running; retry when one has ended`, 1);
    this.inFlight.set(userId, now + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = this.inFlight.get(userId)! - 1;
      if (left === 0) this.inFlight.delete(userId);
      else this.inFlight.set(userId, left);
    };
  }
}
