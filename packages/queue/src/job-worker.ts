import { Queue, type Job, type Worker } from 'bullmq';
import { GatewayError, overloaded, timedOut, withdrawn, type JobEnvelope, type QueuedEnvelope, type QueueName } from '@gateway/contracts';
import { endJobSpan, inJobSpan, startJobSpan, startReplySpan, type JobSpan } from './job-spans.ts';
import type { RedisTarget } from '@gateway/config';
import type { Logger } from '@gateway/log';
import { CancelListener, Withdrawn } from './cancel-listener.ts';
import { createRedis, isRedisUnavailable, redisUnavailableError, type Redis } from './redis-connection.ts';
import { FairShares } from './fair-shares.ts';
import { JobsHere } from './jobs-here.ts';
import { IngressLiveness } from './ingress-liveness.ts';
import { laneTimingOf } from './lane-timing.ts';
import { shardPrefixes } from './queue-shards.ts';
import { drainedCounterKey, PAUSE_LAPSE_MS } from './reply-keys.ts';
import { registerWorker } from './worker-registry.ts';
import { GatedWorker, type Admission, type LaneGate } from './lane-gate.ts';
import { CutByIngress, DeadlinePassed, WorkerStopping } from './job-cut-reasons.ts';
import { ReplySender } from './reply-sender.ts';
import { dropPayload, takePayload } from './payload-beside.ts';
import { finishedJobData, keptWhenFailed, keptWhenFinished, shrinkLeftWhole } from './finished-jobs.ts';

/**
 * Most jobs one BullMQ Worker (lane) runs at once by default; higher concurrency opens more
 * lanes. Fewer, larger lanes spend fewer Redis commands a request (idle lanes each wake and look
 * for the next job), at the same throughput (docs/benchmarks.md, "Why the tuned constants are
 * what they are").
 */
export const LANE_CONCURRENCY = 256;

/**
 * Jobs a lane holds, beyond its concurrency, that wait for room elsewhere (`JobContext.idle`),
 * for each job of its concurrency, by default (QUEUE_WAITING_PER_SLOT): a lane of 256 holds at
 * most 256 more that wait for a full channel, and takes other jobs meanwhile.
 */
export const WAITING_PER_SLOT = 1;

/** The error a job BullMQ failed without running it is answered with. */
function failedUnrun(error: Error): GatewayError {
  const stalled = /stalled more than allowable limit/.test(error.message);
  return new GatewayError({
    status: 500,
    code: 'internal',
    shouldRetry: false,
    message: stalled
      ? 'the request was running when its worker process died (or stalled past its lock), twice; it is not run again'
      : 'the request could not be run (internal error)',
  });
}

/** What a job handler gets: its payload, and the means to stream and to notice cancellation. */
export interface JobContext<P> {
  jobId: string;
  requestId: string;
  payload: P;
  deadline: number;
  /** Aborted when the ingress gives up (client gone, time-out) or the deadline passes. */
  signal: AbortSignal;
  /** True when the ingress relays chunks to its client as they come. */
  stream: boolean;
  /** The job's priority (unset: interactive; higher numbers wait behind lower). */
  priority?: number;
  /**
   * Awaits `wait` as time the job spends waiting for room elsewhere (a full channel's lease, a
   * rate-limited channel's rest): once it has waited a second (IDLE_AFTER_MS) it holds none of
   * the worker's concurrency, which takes other jobs, so a burst waiting on one channel keeps
   * nobody else's jobs out for long.
   */
  idle<T>(wait: Promise<T>): Promise<T>;
  /**
   * The job's work reaches out now (its upstream is being called): from here a withdrawal by its
   * sender (`JobClient.withdrawById`) no longer stops it, until the returned function says the
   * attempt ended with nothing done (a failover follows). Before it, or after that, a withdrawn
   * job's signal aborts and its sender is answered `withdrawn`.
   */
  begin(): () => void;
  /** Resolves when the next chunk may be sent: at once, unless the client is slow or Redis is backed up. */
  sendChunk(chunk: string): Promise<void>;
  log: Logger;
  /** What the handler learned about the job (where it went, what it used), handed to `onJobEnd`. */
  facts: Record<string, unknown>;
}

/** ok: answered with a result; error: answered with an error; cancelled: nobody waited any more; expired: dropped unrun. */
export type JobOutcome = 'ok' | 'error' | 'cancelled' | 'expired';

export type JobHandler<P> = (context: JobContext<P>) => Promise<unknown>;

/** A job's end, run or dropped unrun, for the request log. */
export interface JobEnd<P> {
  jobId: string;
  requestId: string;
  payload: P;
  outcome: JobOutcome;
  /** The error the ingress was answered with (outcome `error`). */
  error?: GatewayError;
  /** The handler's result (outcome `ok`). */
  result?: unknown;
  /** Epoch ms the job was queued, taken by this worker, and ended. */
  queuedAt: number;
  startedAt: number;
  endedAt: number;
  stream: boolean;
  priority?: number;
  /** The handler's `facts` (empty for a job dropped unrun). */
  facts: Record<string, unknown>;
  /** The id of the job's trace, when it was sampled (tracing on). */
  traceId?: string;
}

export interface JobWorkerOptions<P> {
  queue: QueueName;
  /** The Redis (server URL or cluster) the queue lives on. */
  redisTarget: RedisTarget;
  concurrency: number;
  handler: JobHandler<P>;
  log: Logger;
  /** Command connection to share with the handler's store, left open by `close`; one is opened (and closed) when absent. */
  redis?: Redis;
  /** Told of a job dropped unrun (its deadline passed, or its gateway is gone), to give back what it held. */
  onJobDropped?: (payload: P) => void;
  /** Told of every finished job, for metrics. */
  onJobDone?: (outcome: JobOutcome, seconds: number) => void;
  /** Told of every job's end, with what its handler learned, for the request log. Never awaited. */
  onJobEnd?: (end: JobEnd<P>) => void;
  /** Most jobs one lane (BullMQ Worker) runs at once, not counting those that wait (`JobContext.idle`). Default LANE_CONCURRENCY. */
  laneConcurrency?: number;
  /** Jobs that wait for room elsewhere a lane holds beyond its concurrency, per job of it. Default WAITING_PER_SLOT. */
  waitingPerSlot?: number;
  /** Replies for one ingress within this window go out as one stream entry (0: one event-loop turn). */
  replyCoalesceMs?: number;
  /** How long a write of replies is retried through Redis being away, at least (results and errors: to their job's deadline). */
  replyRetryMs?: number;
  /** How many BullMQ queues the queue is split into (QUEUE_SHARDS): the worker serves every one. Default 1. */
  shards?: number;
}

export interface JobWorker {
  /** The first lane; `isRunning()` speaks for all. */
  worker: Worker;
  /** Commands connection of this worker process, for handlers that need the store. */
  redis: Redis;
  /**
   * Stops taking jobs and finishes those it holds; at `deadline` (epoch ms) ends those still
   * running: their senders are answered 503 and their ends reported (`onJobEnd`) with what the
   * handler learned, so their log rows and charges are written before the process exits.
   */
  close(deadline?: number): Promise<void>;
}

/** One job as BullMQ hands it out: its id and when it was added (a batch line's id may be added again once ended). */
const runOf = (job: Job) => `${job.id}@${job.timestamp}`;

/** What the sender of a job ended by its worker's shutdown is answered. */
const stoppedBeforeTheEnd = () => overloaded('the worker stopped before this answer was complete; send the request again');
/** What the sender of a job that waited for a slot when its worker began to stop is answered. */
const stoppedBeforeTheStart = () => overloaded('the worker is stopping and did not start this request; send it again');

/**
 * How a job its ingress gave up on, its client still there, is logged: the gateway's cut (503,
 * 504), not a client that left (499). The ingress answered its client already.
 */
function ingressCutError(reason: unknown): GatewayError | undefined {
  if (reason instanceof DeadlinePassed) return timedOut('the request did not complete within its deadline');
  if (!(reason instanceof CutByIngress)) return undefined;
  return reason.why === 'stopping'
    ? overloaded('the gateway stopped before this answer was complete; send the request again')
    : timedOut('the request did not complete within its deadline');
}

/**
 * Finished jobs, counted in Redis in batches (every 250 ms) for the gateways' admission control.
 */
class FinishedCount {
  private count = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly redis: Redis;
  private readonly key: string;

  constructor(redis: Redis, queue: QueueName) {
    this.redis = redis;
    this.key = drainedCounterKey(queue);
    this.timer = setInterval(() => this.flush(), 250);
    this.timer.unref();
  }

  add(): void {
    this.count++;
  }

  private flush(): void {
    if (this.count === 0) return;
    const n = this.count;
    this.count = 0;
    this.redis.incrby(this.key, n).catch(() => {
      this.count += n;
    });
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    if (this.count > 0) await this.redis.incrby(this.key, this.count).catch(() => {});
  }
}

/** What a handler's run came to: its outcome, and the error its sender got or the result. */
interface RunResult {
  outcome: JobOutcome;
  error?: GatewayError;
  result?: unknown;
}

/**
 * The jobs of one queue in one process, from the moment a lane hands one out: whether it is
 * still worth running, its tenant's slot, its payload, the handler's run with its stream and
 * cancellation, and its answer on the reply path; and its end, however it ends, reported once.
 */
class QueueJobs<P> {
  /** The jobs running here, for a shutdown that must end them at its deadline. */
  readonly running = new Set<AbortController>();
  readonly finished: FinishedCount;
  private readonly here = new JobsHere();
  private readonly fairShares: FairShares;
  private readonly ingresses: IngressLiveness;
  private readonly options: JobWorkerOptions<P>;
  private readonly redis: Redis;
  private readonly cancels: CancelListener;
  private readonly replies: ReplySender;

  constructor(options: JobWorkerOptions<P>, redis: Redis, cancels: CancelListener, replies: ReplySender) {
    this.options = options;
    this.redis = redis;
    this.cancels = cancels;
    this.replies = replies;
    this.fairShares = new FairShares(redis);
    this.ingresses = new IngressLiveness(redis);
    this.finished = new FinishedCount(redis, options.queue);
  }

  /** A lane's hand-out of a job: run here once, however often BullMQ hands it out meanwhile. */
  process(gate: LaneGate, job: Job<QueuedEnvelope<P>>): Promise<void> {
    const run = runOf(job);
    // Handed out again as stalled while its run here goes on, or just after it ended (its lock
    // lapsed while this process or Redis stalled): not run a second time; this hand-out ends
    // with that run.
    if (job.stalledCounter === 0 || !this.here.has(run)) return this.here.run(run, this.runJob(gate, job));
    this.options.log.warn({ reqId: job.data.requestId, jobId: job.id, queue: this.options.queue }, 'job handed out again while this worker runs it, or just ran it (its lock lapsed: its event loop or Redis stalled); it is not run twice');
    return this.here.running(run)?.catch(() => {}) ?? Promise.resolve();
  }

  /** Whether this process runs, or has just run, the job's present hand-out. */
  runsHere(job: Job): boolean {
    return this.here.has(runOf(job));
  }

  private async runJob(gate: LaneGate, job: Job<QueuedEnvelope<P>>): Promise<void> {
    const jobId = job.id!;
    const queued = job.data;
    // The job has left the queue: its tenant's line is one shorter (once, not on a stalled re-run).
    if (queued.tenant && queued.priority && job.attemptsStarted <= 1) void this.fairShares.leave(this.options.queue, queued.tenant, queued.priority);
    const userId = queued.tenant?.userId;
    // Heard from the moment it is taken, so a job waiting for a slot whose client leaves (or
    // whose deadline passes) meanwhile is dropped, however long it waited.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DeadlinePassed()), queued.deadline - Date.now());
    this.cancels.track(jobId, controller);
    let admission: Admission = 'admitted';
    try {
      // Its tenant's share of the lane's slots (`TenantSlots`): it may wait here for a slot.
      if (userId !== undefined) admission = await gate.admit(userId, controller.signal);
      const envelope = await this.envelopeOf(jobId, queued);
      if (!envelope) this.finished.add();
      else if (admission === 'admitted') await this.processEnvelope(gate, controller, job, jobId, envelope);
      else await this.endUnadmitted(job, jobId, envelope, admission, controller.signal.reason);
    } finally {
      clearTimeout(timer);
      this.cancels.untrack(jobId);
      if (userId !== undefined && admission === 'admitted') gate.finish(userId);
      // The payload stored beside the job, and the data the queue board shows of it, shrink only
      // once the job has completed (the lane's 'completed'): a job whose worker dies before
      // then is run again whole.
    }
  }

  /** Why a job is not worth running (nobody waits for its answer), or undefined. */
  private async whyDrop(envelope: JobEnvelope<P>): Promise<[JobOutcome, string] | undefined> {
    if (envelope.deadline <= Date.now()) return ['expired', 'its deadline passed before a worker took it'];
    if (!(await this.ingresses.isAlive(envelope.replyTo))) return ['cancelled', 'the gateway that waited for it is gone'];
    return undefined;
  }

  /**
   * The job's envelope with its payload, read from beside the job when it was too large to be in
   * it; undefined (the ingress told why) when that payload is gone or Redis could not give it.
   */
  private async envelopeOf(jobId: string, queued: QueuedEnvelope<P>): Promise<JobEnvelope<P> | undefined> {
    if (queued.payloadKey === undefined) return queued as JobEnvelope<P>;
    let failure: GatewayError;
    try {
      const text = await takePayload(this.redis, queued.payloadKey);
      if (text !== undefined) return { ...queued, payload: JSON.parse(text) as P };
      failure = overloaded('the request was lost from the queue before a worker took it (Redis restarted?); send it again');
    } catch (error) {
      failure = isRedisUnavailable(error) ? redisUnavailableError() : GatewayError.from(error);
    }
    this.options.log.warn({ reqId: queued.requestId, jobId, queue: this.options.queue }, `job dropped: ${failure.message}`);
    await this.replies.error(queued.replyTo, jobId, failure.toReply()).catch(() => {});
    return undefined;
  }

  /**
   * A job that waited for a slot and runs no more: its client left or its deadline passed
   * ('left'), or its worker began to stop ('stopping': answered at once with a 503 to send it
   * again, not held while the worker drains). It ends as one dropped unrun: what it held is given back.
   */
  private async endUnadmitted(job: Job<QueuedEnvelope<P>>, jobId: string, envelope: JobEnvelope<P>, admission: Exclude<Admission, 'admitted'>, reason: unknown): Promise<void> {
    const { options, replies } = this;
    const fields = { reqId: envelope.requestId, jobId, queue: options.queue };
    let outcome: JobOutcome = 'cancelled';
    let error: GatewayError | undefined;
    if (admission === 'stopping') {
      error = stoppedBeforeTheStart();
      outcome = 'error';
      await replies.error(envelope.replyTo, jobId, error.toReply(), envelope.deadline).catch(() => {});
    } else if (reason instanceof Withdrawn) {
      await replies.error(envelope.replyTo, jobId, withdrawn().toReply(), envelope.deadline).catch(() => {});
    } else if (reason instanceof DeadlinePassed || (reason instanceof CutByIngress && reason.why === 'deadline')) {
      // As a job whose deadline passed before a worker took it: unrun.
      outcome = 'expired';
    } else if ((error = ingressCutError(reason))) {
      outcome = 'error';
    }
    options.log.warn({ ...fields, admission }, admission === 'stopping' ? 'job answered unrun: the worker is stopping' : 'job dropped while it waited for a slot: nobody waits for it any more');
    options.onJobDropped?.(envelope.payload);
    options.onJobDone?.(outcome, 0);
    const now = Date.now();
    options.onJobEnd?.({
      jobId, requestId: envelope.requestId, payload: envelope.payload, outcome, error, queuedAt: job.timestamp,
      startedAt: now, endedAt: now, stream: envelope.stream === true, priority: envelope.priority, facts: {},
    });
    this.finished.add();
  }

  private async processEnvelope(gate: LaneGate, controller: AbortController, job: Job<QueuedEnvelope<P>>, jobId: string, envelope: JobEnvelope<P>): Promise<void> {
    const { options } = this;
    const fields = { reqId: envelope.requestId, jobId };
    const startedAt = Date.now();
    const ended = (outcome: JobOutcome, facts: Record<string, unknown>, error?: GatewayError, result?: unknown, traceId?: string) => options.onJobEnd?.({
      jobId, requestId: envelope.requestId, payload: envelope.payload, outcome, error, result, queuedAt: job.timestamp, startedAt,
      endedAt: Date.now(), stream: envelope.stream === true, priority: envelope.priority, facts, traceId,
    });
    const dropped = await this.whyDrop(envelope);
    if (dropped) {
      options.log.warn({ ...fields, queue: options.queue }, `job dropped: ${dropped[1]}`);
      options.onJobDropped?.(envelope.payload);
      options.onJobDone?.(dropped[0], 0);
      ended(dropped[0], {});
      this.finished.add();
      return;
    }
    const started = performance.now();
    const facts: Record<string, unknown> = {};
    // 'error' stands when even the error could not be sent (Redis gone for longer than the retries).
    let result: RunResult = { outcome: 'error' };
    const span = startJobSpan(options.queue, jobId, envelope, job.timestamp);
    try {
      result = await this.run(gate, controller, jobId, envelope, fields, facts, span);
    } finally {
      endJobSpan(span, result.outcome, result.error?.code);
      this.finished.add();
      const seconds = (performance.now() - started) / 1000;
      options.onJobDone?.(result.outcome, seconds);
      ended(result.outcome, facts, result.error, result.result, span.traceId);
      options.log.info({ ...fields, queue: options.queue, outcome: result.outcome, ms: Math.round(seconds * 1000) }, 'job');
    }
  }

  /** Runs the handler and sends its result or error on the reply path; resolves with the outcome. */
  private async run(gate: LaneGate, controller: AbortController, jobId: string, envelope: JobEnvelope<P>, fields: { reqId: string; jobId: string }, facts: Record<string, unknown>, span: JobSpan): Promise<RunResult> {
    const { options, cancels, replies } = this;
    this.running.add(controller);
    /** Characters of stream chunks sent, for the credit window. */
    let sent = 0;
    const waitForCredit = async (until: number) => {
      for (;;) {
        const waited = cancels.whenCredited(jobId, until, controller.signal, PAUSE_LAPSE_MS);
        if (!waited || (await waited) !== 'lapsed') return;
        // No word from the ingress about this job for the lapse: a chunk it never got, or the
        // ingress itself gone, would hold the job to its deadline.
        if (replies.lost(jobId)) throw new Error('a stream chunk of this job could not be written to Redis');
        if (!(await this.ingresses.isAlive(envelope.replyTo))) return controller.abort(new Error('the gateway that waited for it is gone'));
      }
    };
    // A logger of the job's own only when the handler logs (a child logger per job is not free).
    let log: Logger | undefined;
    try {
      const value = await inJobSpan(span, () => options.handler({
        jobId,
        requestId: envelope.requestId,
        payload: envelope.payload,
        deadline: envelope.deadline,
        signal: controller.signal,
        stream: envelope.stream === true,
        priority: envelope.priority,
        idle: (wait) => gate.idle(wait),
        begin: () => cancels.begin(jobId),
        sendChunk: async (chunk) => {
          await replies.chunk(envelope.replyTo, jobId, chunk);
          sent += chunk.length;
          // The ingress's client reads slower than this: wait until it has caught up.
          await cancels.whenResumed(jobId);
          // And never more than the window ahead of what it has taken, whenever the pause comes.
          if (envelope.window) await waitForCredit(sent - envelope.window);
        },
        get log() {
          return (log ??= options.log.child(fields));
        },
        facts,
      }));
      // Retried to the deadline: given up, the request would time out while its usage is charged,
      // and a batch line would be sent again, run and charged a second time.
      const replying = startReplySpan(span);
      await replies.result(envelope.replyTo, jobId, value, envelope.deadline).finally(() => replying.end());
      return { outcome: 'ok', result: value };
    } catch (error) {
      return await this.answerFailure(error, controller, jobId, envelope, fields);
    } finally {
      this.running.delete(controller);
    }
  }

  /** A run that threw: its sender answered as the reason says (withdrawn, stopped, cut, or the error). */
  private async answerFailure(error: unknown, controller: AbortController, jobId: string, envelope: JobEnvelope<P>, fields: { reqId: string; jobId: string }): Promise<RunResult> {
    const { options, replies } = this;
    const unavailable = !(error instanceof GatewayError) && isRedisUnavailable(error);
    if (unavailable) options.log.warn({ ...fields, err: error }, 'job failed: Redis unavailable or failing over');
    else if (!(error instanceof GatewayError)) options.log.error({ ...fields, err: error }, 'job failed unexpectedly');
    if (controller.signal.reason instanceof Withdrawn) {
      // Its sender waits for a word: the job did not run, and what it held is given back.
      await replies.error(envelope.replyTo, jobId, withdrawn().toReply(), envelope.deadline).catch(() => {});
      return { outcome: 'cancelled' };
    }
    if (controller.signal.reason instanceof WorkerStopping) {
      const stopped = stoppedBeforeTheEnd();
      await replies.error(envelope.replyTo, jobId, stopped.toReply(), envelope.deadline).catch(() => {});
      return { outcome: 'error', error: stopped };
    }
    const cut = ingressCutError(controller.signal.reason);
    if (cut) return { outcome: 'error', error: cut };
    if (controller.signal.aborted) return { outcome: 'cancelled' };
    const answered = unavailable ? redisUnavailableError() : GatewayError.from(error);
    await replies.error(envelope.replyTo, jobId, answered.toReply(), envelope.deadline);
    return { outcome: 'error', error: answered };
  }

  /**
   * A job failed unrun (it killed its worker twice) ends like one dropped: what it held is given
   * back, and the request log has its row, with the error its sender got.
   */
  async endedUnrun(job: Job<QueuedEnvelope<P>>, failure: GatewayError): Promise<void> {
    const { options } = this;
    const queued = job.data;
    let payload = queued.payload;
    if (queued.payloadKey !== undefined) {
      const text = await takePayload(this.redis, queued.payloadKey).catch(() => undefined);
      payload = text === undefined ? undefined : (JSON.parse(text) as P);
    }
    options.onJobDone?.('error', 0);
    if (payload === undefined) return;
    options.onJobDropped?.(payload);
    const now = Date.now();
    options.onJobEnd?.({
      jobId: job.id!, requestId: queued.requestId, payload, outcome: 'error', error: failure, queuedAt: job.timestamp,
      startedAt: job.processedOn ?? now, endedAt: now, stream: queued.stream === true, priority: queued.priority, facts: {},
    });
  }
}

/**
 * The writes that make a finished job kept on the board small (its payload and reply address
 * gone): a stop waits for them before it closes their connections, where a job that ended just
 * before a stop stayed whole in Redis, its payload kept with it.
 */
class Shrinking {
  private readonly writes = new Set<Promise<unknown>>();

  add(write: Promise<unknown>): void {
    const settled = write.catch(() => {}).finally(() => this.writes.delete(settled));
    this.writes.add(settled);
  }

  async done(): Promise<void> {
    await Promise.all(this.writes);
  }
}

/**
 * Runs a handler for every job of a queue and sends its result, error or chunks back on the
 * reply path (`QueueJobs`). Jobs nobody waits for any more (past their deadline) are dropped unrun.
 */
export async function startJobWorker<P>(options: JobWorkerOptions<P>): Promise<JobWorker> {
  // A connection given is its owner's to close (a model worker's router writes its charges on it after this closes).
  const ownsRedis = options.redis === undefined;
  const redis = options.redis ?? createRedis(options.redisTarget, { name: `${options.queue}-worker` });
  const cancels = new CancelListener(createRedis(options.redisTarget, { name: `${options.queue}-worker-cancel`, blocking: true }));
  await cancels.start();
  const replies = new ReplySender(redis, { coalesceMs: options.replyCoalesceMs, retryForMs: options.replyRetryMs });
  const jobs = new QueueJobs(options, redis, cancels, replies);
  const shrinking = new Shrinking();
  const { lanes, connections, laneConcurrency, prefixes } = openLanes(options, jobs, redis, replies, shrinking);
  void shrinkWhatWasLeftWhole(options, redis, prefixes);
  // Seen by the operations console and the metrics as one process serving the queue.
  const registration = registerWorker(redis, options.queue, { lanes: lanes.length, concurrency: laneConcurrency * lanes.length });

  return {
    worker: lanes[0]!,
    redis,
    async close(deadline?: number) {
      const cut = deadline === undefined ? undefined : setTimeout(() => {
        if (jobs.running.size === 0) return;
        options.log.warn({ queue: options.queue, jobs: jobs.running.size }, 'shutdown deadline passed; the jobs still running were ended (503), charged for what they had used');
        for (const controller of jobs.running) controller.abort(new WorkerStopping('the worker is stopping'));
      }, Math.max(0, deadline - Date.now()));
      await Promise.all(lanes.map((lane) => lane.close()));
      clearTimeout(cut);
      await shrinking.done();
      await registration.stop();
      await jobs.finished.close();
      await cancels.close();
      if (ownsRedis) redis.disconnect();
      for (const connection of connections) connection.disconnect();
    },
  };
}

/**
 * The lanes (BullMQ Workers) that hand out the queue's jobs. BullMQ fetches a worker's jobs one
 * at a time. Past LANE_CONCURRENCY, several lanes fetch side by side; below it, one lane wastes
 * fewer fetches (see LANE_CONCURRENCY). A queue split into shards gets lanes on every shard, the
 * concurrency shared between them.
 */
function openLanes<P>(options: JobWorkerOptions<P>, jobs: QueueJobs<P>, redis: Redis, replies: ReplySender, shrinking: Shrinking) {
  const prefixes = shardPrefixes(options.queue, options.shards ?? 1);
  const perShard = Math.max(1, Math.ceil(options.concurrency / prefixes.length));
  const lanesPerShard = Math.max(1, Math.ceil(perShard / (options.laneConcurrency ?? LANE_CONCURRENCY)));
  const fairShares = new FairShares(redis);
  const lanes: GatedWorker<QueuedEnvelope<P>>[] = [];
  const connections: Redis[] = [];
  const laneConcurrency = Math.ceil(perShard / lanesPerShard);
  for (let lane = 0; lane < prefixes.length * lanesPerShard; lane++) {
    const connection = createRedis(options.redisTarget, { name: `${options.queue}-worker-bull${lane === 0 ? '' : `-${lane}`}`, blocking: true });
    connections.push(connection);
    // Jobs waiting for room elsewhere hold none of the lane's concurrency (`LaneGate`).
    const worker: GatedWorker<QueuedEnvelope<P>> = new GatedWorker<QueuedEnvelope<P>>(options.queue, (job) => jobs.process(worker.gate, job), {
      connection,
      prefix: prefixes[Math.floor(lane / lanesPerShard)]!,
      concurrency: laneConcurrency,
      maxStalledCount: 1,
      // One lane a shard is enough to look for stalled jobs.
      skipStalledCheck: lane % lanesPerShard > 0,
      ...laneTimingOf(options.redisTarget),
    }, laneConcurrency * (options.waitingPerSlot ?? WAITING_PER_SLOT), (atShare) => fairShares.waitingBesides(options.queue, atShare));
    worker.on('error', (err) => options.log.warn({ err }, 'worker connection error'));
    // Once completed, and not before: a job whose worker died after its run and before its
    // completion is run again by the next, with its whole request. Its payload stored beside it
    // goes, and a job kept for the queue board keeps no payload (finished-jobs.ts; BullMQ's script
    // that completes it has no way to: one round trip more, after the reply went out).
    worker.on('completed', (job) => {
      const queued = job.data;
      if (queued.payloadKey !== undefined) dropPayload(redis, queued.payloadKey);
      if (keptWhenFinished(job.opts)) shrinking.add(job.updateData(finishedJobData(queued) as QueuedEnvelope<P>));
    });
    // A job that stalled too often (its worker died while it ran, twice: maxStalledCount) is
    // failed by the worker that next takes it, without a run. Its sender is told so at once
    // rather than at its deadline (a batch line would be sent again and kill the worker again),
    // and its payload goes with it, as with a job that ends.
    worker.on('failed', (job, error) => {
      if (!job) return;
      const queued = job.data;
      // Stalled, but not dead: this process runs it, or has just ended it (data without its
      // reply address is a finished job's), its lock lapsed on a loaded machine. Its run answers it.
      if (queued.replyTo === undefined || (jobs.runsHere(job) && /stalled/i.test(error.message))) {
        options.log.warn({ reqId: queued.requestId, jobId: job.id, queue: options.queue, reason: error.message }, 'job failed as stalled while this worker ran it (its lock lapsed: its event loop or Redis stalled); its run answers it');
        return;
      }
      const failure = failedUnrun(error);
      options.log.error({ reqId: queued.requestId, jobId: job.id, queue: options.queue, reason: error.message }, `job failed unrun: ${failure.message}`);
      void replies.error(queued.replyTo, job.id!, failure.toReply(), queued.deadline).catch(() => {});
      void jobs.endedUnrun(job, failure).finally(() => {
        if (queued.payloadKey !== undefined) dropPayload(redis, queued.payloadKey);
        // Kept on the board without its payload (finished-jobs.ts); after the reply, which needs its address.
        if (keptWhenFailed(job.opts)) shrinking.add(job.updateData(finishedJobData(queued) as QueuedEnvelope<P>));
      });
    });
    lanes.push(worker);
  }
  return { lanes, connections, laneConcurrency, prefixes };
}

/** What a worker killed outright left whole on the board is made small (finished-jobs.ts). */
async function shrinkWhatWasLeftWhole<P>(options: JobWorkerOptions<P>, redis: Redis, prefixes: readonly string[]): Promise<void> {
  await Promise.all(prefixes.map(async (prefix) => {
    const queue = new Queue(options.queue, { connection: redis, prefix });
    try {
      const shrunk = await shrinkLeftWhole(queue);
      if (shrunk > 0) options.log.info({ queue: options.queue, jobs: shrunk }, 'finished jobs a stopped worker had left whole made small');
    } finally {
      await queue.close();
    }
  })).catch((error: unknown) => options.log.warn({ err: error, queue: options.queue }, 'finished jobs left whole not made small yet (Redis unavailable); the next start tries again'));
}
