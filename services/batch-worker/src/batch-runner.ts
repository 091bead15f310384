import { randomUUID } from 'node:crypto';
import { GatewayError } from '@gateway/contracts';
import { isDatabaseUnavailable, type BatchRuns } from '@gateway/database';
import { isRedisUnavailable } from '@gateway/queue';
import type { Logger } from '@gateway/log';
import { BatchFeed, type BatchFeedDeps } from './batch-feed.ts';
import { UserStorageTally } from './user-storage-tally.ts';

export interface BatchRunnerOptions {
  runs: BatchRuns;
  feed: Omit<BatchFeedDeps, 'runner' | 'heartbeatTtlMs' | 'storage'>;
  /** Batches run at once by this worker (BATCH_WORKER_BATCHES). */
  maxBatches: number;
  /** Batches of one user run at once by every batch worker together (BATCH_USER_BATCHES). */
  perUser?: number;
  /** Days an ended batch is kept (its lines, results and result files), then dropped; 0 keeps them for good (BATCH_RETENTION_DAYS). */
  retentionDays?: number;
  /** A batch whose worker stops renewing for this long is taken over by another. Default 15 s. */
  leaseMs?: number;
  log: Logger;
}

const POLL_EVERY_MS = 500;
/**
 * A batch that stops with an error (not an outage) is taken again after a back-off, 0.5 s
 * doubling; the RUN_FAILURES-th time in a row it is failed instead: an error that comes back
 * every time (before, a line nested 6,000 deep) kept its batch taken every 0.5 s for good.
 */
const RUN_FAILURES = 4;
const FIRST_BACKOFF_MS = 500;
/** Ended batches past their retention are looked for this often, and dropped this many at a time. */
const SWEEP_EVERY_MS = 3_600_000;
const SWEEP_BATCHES = 10;

/**
 * Takes batches to run from PostgreSQL and runs each as a `BatchFeed`, holding a lease on it
 * that it renews; a batch whose lease is lost (this worker was paused past it, and another took
 * it) stops here. Several batch workers share the batches this way; one killed loses none.
 */
export class BatchRunner {
  /** What each user's batches here have stored, one count for all of them. */
  private readonly storage = new UserStorageTally();
  readonly id = `batch-worker-${randomUUID()}`;
  private readonly options: BatchRunnerOptions;
  private readonly feeds = new Map<string, { feed: BatchFeed; done: Promise<void> }>();
  /** Batches that stopped with an error, and how many times in a row. */
  private readonly failures = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;
  private lastRenew = 0;
  private ticking = false;
  private lastSweep = 0;
  private sweeping = false;

  constructor(options: BatchRunnerOptions) {
    this.options = options;
  }

  get running(): number {
    return this.feeds.size;
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), POLL_EVERY_MS);
    void this.tick();
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.stopping) return;
    if (!this.sweeping && Date.now() - this.lastSweep >= SWEEP_EVERY_MS) void this.sweep();
    this.ticking = true;
    const { runs, log } = this.options;
    const leaseMs = this.options.leaseMs ?? 15_000;
    try {
      if (Date.now() - this.lastRenew >= leaseMs / 3) {
        const held = await runs.renew(this.id, [...this.feeds.keys()], leaseMs);
        this.lastRenew = Date.now();
        for (const [id, { feed }] of this.feeds) {
          if (!held.has(id)) {
            log.warn({ batch: id }, 'lease on a batch lost: another batch worker runs it now');
            feed.stop();
          }
        }
      }
      for (const row of await runs.claim(this.id, this.options.maxBatches - this.feeds.size, leaseMs, this.options.perUser)) {
        const feed = new BatchFeed(row, { ...this.options.feed, runner: this.id, heartbeatTtlMs: leaseMs + 15_000, storage: this.storage });
        log.info({ batch: row.id, status: row.status }, 'batch taken');
        const done = feed.run().then(() => { this.failures.delete(row.id); }, (error: unknown) => this.stoppedBy(row.id, error)).finally(() => {
          if (this.feeds.get(row.id)?.feed === feed) this.feeds.delete(row.id);
        });
        this.feeds.set(row.id, { feed, done });
      }
    } catch (error) {
      log.warn({ reason: (error as Error).message }, 'batches not polled (PostgreSQL unavailable?)');
      // Leases not renewed for most of their life may be another worker's soon: stop feeding them
      // (lines in flight run on, for whoever holds the batch next, this worker or another).
      if (this.feeds.size > 0 && Date.now() - this.lastRenew > (leaseMs * 2) / 3) {
        log.warn({ batches: this.feeds.size }, 'leases not renewed in time: feeding stopped until they are taken again');
        for (const { feed } of this.feeds.values()) feed.stop();
      }
    } finally {
      this.ticking = false;
    }
  }

  /**
   * Drops the batches that ended more than `retentionDays` ago, a few at a time (each takes its
   * lines with it), once an hour; every batch worker sweeps, and a batch is dropped once.
   */
  private async sweep(): Promise<void> {
    const days = this.options.retentionDays ?? 0;
    this.lastSweep = Date.now();
    if (days <= 0) return;
    this.sweeping = true;
    try {
      const endedBefore = Math.floor(Date.now() / 1000) - days * 86_400;
      let dropped = 0;
      for (let n = SWEEP_BATCHES; n === SWEEP_BATCHES && !this.stopping; dropped += n) n = await this.options.runs.dropEnded(endedBefore, SWEEP_BATCHES);
      if (dropped > 0) this.options.log.info({ dropped, days }, 'ended batches past their retention dropped');
    } catch (error) {
      this.options.log.warn({ reason: (error as Error).message }, 'ended batches not dropped yet (PostgreSQL unavailable?)');
    } finally {
      this.sweeping = false;
    }
  }

  /** A batch stopped with an error: given back after a back-off, or failed when it keeps coming back. */
  private async stoppedBy(id: string, error: unknown): Promise<void> {
    const { runs, log } = this.options;
    const outage = isDatabaseUnavailable(error) || isRedisUnavailable(error);
    const failures = outage ? 0 : (this.failures.get(id) ?? 0) + 1;
    if (failures >= RUN_FAILURES) {
      this.failures.delete(id);
      log.error({ batch: id, err: error, failures }, 'batch failed: it stopped with an error every time it was taken');
      const message = `the batch could not be run: it stopped with an error ${failures} times in a row (${GatewayError.from(error).message})`;
      return runs.failRun(this.id, id, message).catch(() => runs.release(this.id, id).catch(() => {}));
    }
    if (failures > 0) this.failures.set(id, failures);
    log.error({ batch: id, err: error, failures }, 'batch stopped by an error; it will be taken again');
    await runs.release(this.id, id, failures > 0 ? FIRST_BACKOFF_MS * 2 ** (failures - 1) : 0).catch(() => {});
  }

  /** Stops feeding every batch and gives them back, for another worker to take at once. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    const running = [...this.feeds.entries()];
    for (const [, { feed }] of running) feed.stop();
    await Promise.all(running.map(([, { done }]) => done));
    await Promise.all(running.map(([id]) => this.options.runs.release(this.id, id).catch(() => {})));
  }
}
