import type { Redis } from './redis-connection.ts';
import { CANCEL_CHANNEL } from './reply-keys.ts';

/** How long a cancellation for a job this worker does not (yet) run is remembered. */
const REMEMBER_MS = 60_000;
const REMEMBER_MAX = 10_000;

/**
 * A worker process's ear for cancellations: aborts the signal of a job it is running when the
 * ingress that waited for it has given up (client gone, or time-out). A cancellation can arrive
 * while BullMQ is still handing the job to this worker (active, but not yet tracked, so the
 * ingress could not remove it either); it is remembered for a minute, and the job is aborted
 * the moment it is tracked.
 */
export class CancelListener {
  private readonly subscriber: Redis;
  private readonly running = new Map<string, AbortController>();
  /** Job id → when its cancellation was heard, for jobs not running here (yet). */
  private readonly heard = new Map<string, number>();

  constructor(subscriber: Redis) {
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, jobId: string) => {
      const running = this.running.get(jobId);
      if (running) return running.abort(new Error('cancelled by the ingress'));
      this.remember(jobId);
    });
  }

  private remember(jobId: string): void {
    const now = Date.now();
    // Oldest first (insertion order): drop what is too old, and keep the map bounded.
    for (const [id, at] of this.heard) {
      if (now - at < REMEMBER_MS && this.heard.size < REMEMBER_MAX) break;
      this.heard.delete(id);
    }
    this.heard.set(jobId, now);
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(CANCEL_CHANNEL);
  }

  track(jobId: string, controller: AbortController): void {
    this.running.set(jobId, controller);
    const heardAt = this.heard.get(jobId);
    if (heardAt !== undefined) {
      this.heard.delete(jobId);
      if (Date.now() - heardAt < REMEMBER_MS) controller.abort(new Error('cancelled by the ingress'));
    }
  }

  untrack(jobId: string): void {
    this.running.delete(jobId);
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
