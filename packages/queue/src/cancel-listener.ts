import type { Redis } from './redis-connection.ts';
import { CANCEL_CHANNEL } from './reply-keys.ts';

/**
 * A worker process's ear for cancellations: aborts the signal of a job it is running when the
 * ingress that waited for it has given up (client gone, or time-out).
 */
export class CancelListener {
  private readonly subscriber: Redis;
  private readonly running = new Map<string, AbortController>();

  constructor(subscriber: Redis) {
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, jobId: string) => {
      this.running.get(jobId)?.abort(new Error('cancelled by the ingress'));
    });
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(CANCEL_CHANNEL);
  }

  track(jobId: string, controller: AbortController): void {
    this.running.set(jobId, controller);
  }

  untrack(jobId: string): void {
    this.running.delete(jobId);
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
