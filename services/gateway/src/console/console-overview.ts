/**
 * What the operations console shows at a glance, in one answer it polls: each queue (per shard,
 * with the worker processes serving it, their concurrency, its drain rate and the wait that
 * admission estimates), each channel (in flight against max_concurrency, its state, and how its
 * upstream calls went over the last minutes from the request log), and the batches in progress.
 * The live parts come from Redis; the log's parts are left out, not failed, while PostgreSQL is
 * away, so the console still shows the queues and channels then.
 *
 * However many consoles are open, one read is made at a time and its answer shared for
 * OVERVIEW_FRESH_MS; the channels' health (an aggregate over minutes of log rows) for
 * LOG_PARTS_FRESH_MS.
 */
import { QueueName, Role, RUNNING_BATCH_STATUSES } from '@gateway/contracts';
import { RequestLogQuery, type ChannelHealth, type Database } from '@gateway/database';
import type { QueueBacklog } from '../intake/queue-backlog.ts';
import type { BatchOverview, BatchOverviewItem } from '../batches/batch-overview.ts';
import type { ChannelState, OperationsSnapshot, QueueState } from '../management/operations-snapshot.ts';
import { logReads } from '../management/request-log-routes.ts';

/** The minutes of the request log a channel's recent calls are counted over. */
export const CHANNEL_HEALTH_MINUTES = 5;
const RUNNING_BATCHES_SHOWN = 20;
export const OVERVIEW_FRESH_MS = 1_500;
export const LOG_PARTS_FRESH_MS = 10_000;
/** The overview's own reads of the log: an administrator's, of no user. */
const CONSOLE_READER = { id: -1, role: Role.root };

/** A value read at most once per `freshMs`, concurrent callers sharing the read under way. */
export class Shared<T> {
  private readonly read: () => Promise<T>;
  private readonly freshMs: number;
  private last: { at: number; value: Promise<T> } | undefined;

  constructor(read: () => Promise<T>, freshMs: number) {
    this.read = read;
    this.freshMs = freshMs;
  }

  get(): Promise<T> {
    const now = Date.now();
    if (!this.last || now - this.last.at >= this.freshMs) {
      const value = this.read();
      this.last = { at: now, value };
      // A failed read is not kept: the next caller tries again.
      value.catch(() => { if (this.last?.value === value) this.last = undefined; });
    }
    return this.last.value;
  }
}

export interface ConsoleQueue extends QueueState {
  /** Jobs finished a second over the last few seconds (FINISHED_WINDOW_MS): 0 when none finish. */
  drain_per_second: number;
  /** Jobs waiting for a worker, every shard together. */
  backlog: number;
  /** How long a job queued now would wait, as admission estimates it (null: nothing drains). */
  wait_estimate_ms: number | null;
}

export interface ConsoleChannel extends ChannelState {
  /** Its upstream calls over the last CHANNEL_HEALTH_MINUTES; absent without the request log. */
  recent?: Omit<ChannelHealth, 'channel_id'>;
}

export interface ConsoleOverviewAnswer {
  at: number;
  queues: ConsoleQueue[];
  channels: ConsoleChannel[];
  /** Batches validating, in progress, finalizing or cancelling; absent without PostgreSQL. */
  batches?: { total: number; items: BatchOverviewItem[] };
  /** Why the log's parts are missing, when they are. */
  log_unavailable?: string;
}

const NO_CALLS: Omit<ChannelHealth, 'channel_id'> = { calls: 0, errors: 0, rate_limited: 0, p50_ms: 0, p99_ms: 0 };

export class ConsoleOverview {
  private readonly operations: OperationsSnapshot;
  /** Admission's sampler (a decorator of the app, there once it is ready). */
  private readonly admission: () => QueueBacklog;
  private readonly batches: BatchOverview;
  private readonly database: Database | undefined;
  private readonly overview = new Shared(() => this.compose(), OVERVIEW_FRESH_MS);
  // In the administrators' turns of the log's connections, as the console's own reads.
  private readonly health = new Shared(() => logReads.run(CONSOLE_READER, () => new RequestLogQuery(this.database!).channelHealth(CHANNEL_HEALTH_MINUTES * 60)), LOG_PARTS_FRESH_MS);

  constructor(operations: OperationsSnapshot, admission: () => QueueBacklog, batches: BatchOverview, database: Database | undefined) {
    this.operations = operations;
    this.admission = admission;
    this.batches = batches;
    this.database = database;
  }

  read(): Promise<ConsoleOverviewAnswer> {
    return this.overview.get();
  }

  private async compose(): Promise<ConsoleOverviewAnswer> {
    const [queues, channels, logged] = await Promise.all([this.operations.queues(), this.operations.channelStates(), this.logged()]);
    const admission = this.admission();
    const health = new Map(logged.health?.map(({ channel_id, ...calls }) => [channel_id, calls]));
    return {
      at: Date.now(),
      queues: queues.map((queue) => {
        const { backlog, waitMs } = admission.estimate(queue.queue as QueueName);
        return { ...queue, backlog, drain_per_second: admission.finishedRate(queue.queue as QueueName), wait_estimate_ms: Number.isFinite(waitMs) ? Math.round(waitMs) : null };
      }),
      channels: channels.map((channel) => (logged.health ? { ...channel, recent: health.get(channel.id) ?? NO_CALLS } : channel)),
      ...(logged.batches ? { batches: logged.batches } : {}),
      ...(logged.problem ? { log_unavailable: logged.problem } : {}),
    };
  }

  /** The parts read from PostgreSQL (channel health shared for LOG_PARTS_FRESH_MS), or why there are none. */
  private async logged(): Promise<{ health?: ChannelHealth[]; batches?: ConsoleOverviewAnswer['batches']; problem?: string }> {
    if (!this.database) return { problem: 'this gateway runs without DATABASE_URL: no request log and no batches' };
    try {
      const [health, page] = await Promise.all([
        this.health.get(),
        this.batches.page({ p: 1, page_size: RUNNING_BATCHES_SHOWN, status: [...RUNNING_BATCH_STATUSES] }),
      ]);
      return { health, batches: { total: page.total, items: page.items } };
    } catch (error) {
      return { problem: `PostgreSQL did not answer: ${(error as Error).message}` };
    }
  }
}
