import { clientCancelled, overloaded } from '@gateway/contracts';

/**
 * At most `max` requests of one user at a time between their body's parse and their job's
 * enqueue at this gateway (admission, quota hold, fair place, the payload and BullMQ's add):
 * the rest of a burst waits its turn here, each one's place handed to the next as a job lands
 * on its queue. A burst's thousands otherwise all stood in those steps at once, their Redis
 * answers and continuations filling the event loop's every turn, and another user's request
 * waited a turn of them at each of its own steps. Only the enqueue is counted, not the wait for
 * the answer, so a user's requests in flight are not capped by it: a burst of 5,000 was all
 * answered 200, its last reply as soon as before, and the steady user beside it waited half as
 * long (`npm run bench`'s two tenants: +130 to +260 ms over its baseline with a window of 8, +314
 * to +390 without; docs/benchmarks.md).
 *
 * A waiter leaves the line when its client leaves (its request ends as cancelled) or when its
 * deadline passes (503 with Retry-After: it was never queued), so nothing waits for a place
 * that may never come.
 */
export class IntakeWindow {
  private readonly inIntake = new Map<string, number>();
  /** Each owner's waiters in arrival order (a Set: one that leaves is taken out in one step). */
  private readonly waiting = new Map<string, Set<() => void>>();
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  /**
   * A place in a window (`owner`: a user's interactive requests, or its batch ones, each a window
   * of their own, so that a user's batch burst never holds its interactive requests): resolves
   * with its release (call it once; more calls do nothing), at once while there is room; rejects
   * when the client leaves or `deadline` (epoch ms) passes first.
   */
  enter(owner: string, gone: AbortSignal, deadline: number): Promise<() => void> {
    if (gone.aborted) return Promise.reject(clientCancelled());
    const n = this.inIntake.get(owner) ?? 0;
    if (n < this.max) {
      this.inIntake.set(owner, n + 1);
      return Promise.resolve(this.releaseOf(owner));
    }
    return new Promise((resolve, reject) => {
      let line = this.waiting.get(owner);
      if (!line) this.waiting.set(owner, (line = new Set()));
      const waiters = line;
      const settle = () => {
        clearTimeout(timer);
        gone.removeEventListener('abort', onGone);
      };
      const leaveLine = (error: Error) => {
        waiters.delete(grant);
        if (waiters.size === 0 && this.waiting.get(owner) === waiters) this.waiting.delete(owner);
        settle();
        reject(error);
      };
      // Its place handed over: the count stays as it is.
      const grant = () => {
        settle();
        resolve(this.releaseOf(owner));
      };
      const onGone = () => leaveLine(clientCancelled());
      const timer = setTimeout(() => leaveLine(overloaded('the request waited past its time-out for its turn to be queued; send it again')), Math.max(0, deadline - Date.now()));
      gone.addEventListener('abort', onGone, { once: true });
      waiters.add(grant);
    });
  }

  private releaseOf(owner: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.leave(owner);
    };
  }

  private leave(owner: string): void {
    const line = this.waiting.get(owner);
    if (line) {
      const next = line.values().next().value!;
      line.delete(next);
      if (line.size === 0) this.waiting.delete(owner);
      return next();
    }
    const n = (this.inIntake.get(owner) ?? 1) - 1;
    if (n > 0) this.inIntake.set(owner, n);
    else this.inIntake.delete(owner);
  }
}
