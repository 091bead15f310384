import { GatewayError, QUEUE_PREFIX, type QueueName } from '@gateway/contracts';
import { drainedCounterKey, type Redis } from '@gateway/queue';

export interface BacklogAdmissionOptions {
  redis: Redis;
  queues: readonly QueueName[];
  /** The wait a request may still be admitted to: normally REQUEST_TIMEOUT_MS. */
  maxWaitMs: number;
  /** A backlog this long is refused even before a drain rate is known. */
  maxBacklog: number;
  /** How often the backlog and the drain rate are sampled. Default 250 ms. */
  sampleEveryMs?: number;
}

interface QueueSample {
  backlog: number;
  drained: number;
  at: number;
  /** Jobs finished per second, smoothed. */
  rate: number;
}

/**
 * Admission control: refuses a request at once (503 with Retry-After) when its queue's backlog
 * could not drain within the request's time-out at the rate the workers currently finish jobs,
 * instead of accepting work it will time out on. Backlog and drain rate are sampled in the
 * background (one pipelined round trip per period), never per request.
 */
export class BacklogAdmission {
  private readonly options: Required<BacklogAdmissionOptions>;
  private readonly samples = new Map<QueueName, QueueSample>();
  private timer: NodeJS.Timeout | undefined;

  constructor(options: BacklogAdmissionOptions) {
    this.options = { sampleEveryMs: 250, ...options };
  }

  start(): void {
    this.timer ??= setInterval(() => void this.sample().catch(() => {}), this.options.sampleEveryMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Backlog ahead of a new job, and the expected wait in ms (Infinity when nothing drains). */
  estimate(queue: QueueName): { backlog: number; waitMs: number } {
    const sample = this.samples.get(queue);
    if (!sample || sample.backlog === 0) return { backlog: 0, waitMs: 0 };
    return { backlog: sample.backlog, waitMs: sample.rate > 0 ? (sample.backlog / sample.rate) * 1000 : Infinity };
  }

  /** Throws 503 when a job put on `queue` now would not be served within the time-out. */
  admit(queue: QueueName): void {
    const { backlog, waitMs } = this.estimate(queue);
    if (backlog === 0) return;
    const tooLong = Number.isFinite(waitMs) ? waitMs > this.options.maxWaitMs : backlog > this.options.maxBacklog;
    if (backlog > this.options.maxBacklog || tooLong) {
      const retryAfter = Number.isFinite(waitMs) ? Math.ceil((waitMs - this.options.maxWaitMs) / 1000) + 1 : 5;
      throw new GatewayError({
        status: 503,
        code: 'overloaded',
        message: `the ${queue} queue is too long to serve this request in time (${backlog} jobs waiting); retry later`,
        retryAfter: Math.min(Math.max(retryAfter, 1), 60),
      });
    }
  }

  private async sample(): Promise<void> {
    const pipeline = this.options.redis.pipeline();
    for (const queue of this.options.queues) {
      pipeline.llen(`${QUEUE_PREFIX}:${queue}:wait`);
      pipeline.zcard(`${QUEUE_PREFIX}:${queue}:prioritized`);
      pipeline.get(drainedCounterKey(queue));
    }
    const results = (await pipeline.exec()) ?? [];
    const now = Date.now();
    this.options.queues.forEach((queue, i) => {
      const backlog = Number(results[i * 3]?.[1] ?? 0) + Number(results[i * 3 + 1]?.[1] ?? 0);
      const drained = Number(results[i * 3 + 2]?.[1] ?? 0);
      const previous = this.samples.get(queue);
      let rate = previous?.rate ?? 0;
      if (previous && now > previous.at) {
        const instant = Math.max(0, drained - previous.drained) / ((now - previous.at) / 1000);
        // Learn only from periods in which jobs finished: an idle queue keeps its last known
        // rate, and a stalled one shows as a backlog that grows against that rate.
        if (instant > 0) rate = rate > 0 ? rate * 0.7 + instant * 0.3 : instant;
      }
      this.samples.set(queue, { backlog, drained, at: now, rate });
    });
  }
}
