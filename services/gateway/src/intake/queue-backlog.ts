import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { overloaded, type QueueName } from '@gateway/contracts';
import { drainedCounterKey, shardPrefixes, type Redis } from '@gateway/queue';

export interface QueueBacklogOptions {
  redis: Redis;
  queues: readonly QueueName[];
  /** The shards each queue is split into (QUEUE_SHARDS); their backlogs are summed. Default 1. */
  shards?: number;
  /** The wait a request may still be admitted to: normally REQUEST_TIMEOUT_MS. */
  maxWaitMs: number;
  /** A backlog this long is refused even before a drain rate is known. */
  maxBacklog: number;
  /** How often the backlog and the drain rate are sampled. Default 250 ms. */
  sampleEveryMs?: number;
}

/**
 * What "finished a second" means to an operator: jobs finished over this last window, so it falls
 * to 0 this long after the last job finished (admission's own rate keeps its last known value).
 */
export const FINISHED_WINDOW_MS = 5_000;

interface QueueSample {
  backlog: number;
  drained: number;
  at: number;
  /** Jobs finished per second, smoothed. */
  rate: number;
}

/**
 * The model queues' backlog check (the `BacklogGate` of @gateway/admission): refuses a request
 * at once (503 with Retry-After) when its queue's backlog could not drain within the request's
 * time-out at the rate the workers currently finish jobs, instead of accepting work it will time
 * out on. Backlog and drain rate are sampled in the
 * background (one pipelined round trip per period), never per request.
 */
export class QueueBacklog {
  private readonly options: Required<QueueBacklogOptions>;
  private readonly samples = new Map<QueueName, QueueSample>();
  /** Per queue, its drained counter as sampled over the last FINISHED_WINDOW_MS, oldest first. */
  private readonly recent = new Map<QueueName, { at: number; drained: number }[]>();
  /** Per queue, each shard's wait list and prioritized set (their lengths are its backlog). */
  private readonly backlogKeys: { wait: string; prioritized: string }[][];
  private timer: NodeJS.Timeout | undefined;

  constructor(options: QueueBacklogOptions) {
    this.options = { sampleEveryMs: 250, shards: 1, ...options };
    this.backlogKeys = this.options.queues.map((queue) =>
      shardPrefixes(queue, this.options.shards).map((prefix) => ({ wait: `${prefix}:${queue}:wait`, prioritized: `${prefix}:${queue}:prioritized` })));
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

  /** Jobs `queue` finishes a second, as admission last measured it (0 before any finished). */
  drainRate(queue: QueueName): number {
    return this.samples.get(queue)?.rate ?? 0;
  }

  /** Jobs `queue` finished a second over the last FINISHED_WINDOW_MS: 0 once none finish. */
  finishedRate(queue: QueueName): number {
    const points = this.recent.get(queue) ?? [];
    const first = points[0];
    const last = points.at(-1);
    if (!first || !last || last.at <= first.at || Date.now() - last.at > FINISHED_WINDOW_MS) return 0;
    return Math.max(0, last.drained - first.drained) / ((last.at - first.at) / 1000);
  }

  /** Throws 503 when a job put on `queue` now would not be served within the time-out. */
  admit(queue: QueueName): void {
    const { backlog, waitMs } = this.estimate(queue);
    if (backlog === 0) return;
    const tooLong = Number.isFinite(waitMs) ? waitMs > this.options.maxWaitMs : backlog > this.options.maxBacklog;
    if (backlog > this.options.maxBacklog || tooLong) {
      const retryAfter = Number.isFinite(waitMs) ? Math.ceil((waitMs - this.options.maxWaitMs) / 1000) + 1 : 5;
      throw overloaded(`the ${queue} queue is too long to serve this request in time (${backlog} jobs waiting); retry later`, Math.min(Math.max(retryAfter, 1), 60));
    }
  }

  private async sample(): Promise<void> {
    // Every shard's keys are in a slot of their own: one command each (auto-pipelined on one
    // server), not one pipeline, which a cluster would refuse across slots.
    const { redis } = this.options;
    const counts = await Promise.all(this.options.queues.map(async (queue, i) => {
      const [lengths, drained] = await Promise.all([
        Promise.all(this.backlogKeys[i]!.flatMap((shard) => [redis.llen(shard.wait), redis.zcard(shard.prioritized)])),
        redis.get(drainedCounterKey(queue)),
      ]);
      return { backlog: lengths.reduce((a, b) => a + b, 0), drained: Number(drained ?? 0) };
    }));
    const now = Date.now();
    this.options.queues.forEach((queue, i) => {
      const { backlog, drained } = counts[i]!;
      const previous = this.samples.get(queue);
      let rate = previous?.rate ?? 0;
      if (previous && now > previous.at) {
        const instant = Math.max(0, drained - previous.drained) / ((now - previous.at) / 1000);
        // Learn only from periods in which jobs finished: an idle queue keeps its last known
        // rate, and a stalled one shows as a backlog that grows against that rate.
        if (instant > 0) rate = rate > 0 ? rate * 0.7 + instant * 0.3 : instant;
      }
      this.samples.set(queue, { backlog, drained, at: now, rate });
      const points = this.recent.get(queue) ?? [];
      points.push({ at: now, drained });
      while (now - points[0]!.at > FINISHED_WINDOW_MS) points.shift();
      this.recent.set(queue, points);
    });
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The model queues' backlog and drain rate, sampled in the background, for admission. */
    queueBacklog: QueueBacklog;
  }
}

/** The backlog sampler as a decorator that owns it: sampling once the app is ready, stopped when it closes. */
export const queueBacklog = fastifyPlugin(async (app: FastifyInstance, options: QueueBacklogOptions) => {
  const backlog = new QueueBacklog(options);
  app.decorate('queueBacklog', backlog);
  app.addHook('onReady', async () => backlog.start());
  app.addHook('onClose', async () => backlog.stop());
}, { name: 'queue-backlog' });
