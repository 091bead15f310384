import { clientCancelled } from '@gateway/contracts';

/**
 * At most `max` requests of one user at a time between their body's parse and their job's
 * enqueue at this gateway (admission, quota hold, fair place, the payload and BullMQ's add):
 * the rest of a burst waits its turn here, each one's place handed to the next as a job lands
 * on its queue. A burst's thousands otherwise all stood in those steps at once, their Redis
 * answers and continuations filling the event loop's every turn, and another tenant's request
 * waited a turn of them at each of its own steps. Only the enqueue is counted, not the wait for
 * the answer, so a user's requests in flight are not capped by it: a burst of 5,000 was all
 * answered 200, its last reply as soon as before, and the steady tenant beside it waited half as
 * long (`npm run bench`'s two tenants: +130 to +239 ms over its baseline with a window of 8, +314
 * to +390 without; docs/benchmarks.md).
 */
export class IntakeWindow {
  private readonly inIntake = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  /**
   * A place in a window (`owner`: a user's interactive requests, or its batch ones, each a window
   * of their own, so that a user's batch burst never holds its interactive requests): resolves
   * with its release (call it once), at once while there is room.
   */
  enter(owner: string, gone: AbortSignal): Promise<() => void> {
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.leave(owner);
    };
    const n = this.inIntake.get(owner) ?? 0;
    if (n < this.max) {
      this.inIntake.set(owner, n + 1);
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(owner) ?? [];
      if (queue.length === 0) this.waiting.set(owner, queue);
      // Its place handed over: a client gone meanwhile passes it straight on, and its request ends.
      queue.push(() => {
        if (!gone.aborted) return resolve(release);
        release();
        reject(clientCancelled());
      });
    });
  }

  private leave(owner: string): void {
    const queue = this.waiting.get(owner);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(owner);
    if (next) return next();
    const n = (this.inIntake.get(owner) ?? 1) - 1;
    if (n > 0) this.inIntake.set(owner, n);
    else this.inIntake.delete(owner);
  }
}
