import { randomUUID } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import { defineLuaScripts } from '@gateway/config';
import { clientCancelled, GatewayError, timedOut, type QueuedEnvelope, type QueueName } from '@gateway/contracts';
import { shardPrefixes } from './queue-shards.ts';
import { redisUnavailableError, type Redis } from './redis-connection.ts';
import type { Tenant } from './fair-shares.ts';
import type { ReplyInbox } from './reply-inbox.ts';
import { publishJobControl } from './job-control.ts';
import { INGRESS_STOPPING, type IngressCut } from './job-cut-reasons.ts';
import { CREDIT_RESEND_MS, PAUSE_RENEW_MS } from './reply-keys.ts';
import { dropPayload, newPayloadKey, PAYLOAD_INLINE_MAX_CHARS, putPayload } from './payload-beside.ts';
import { queueScripts } from './queue-scripts.ts';
import { finishedOptionsFor, REMOVED_WHEN_FINISHED } from './finished-jobs.ts';

/** How a client's full socket ended: it drained (the client reads again), or the client left. */
export type CaughtUp = 'drained' | 'gone';

/** How a job is requested (`JobClient.request`); a job whose unsure add is followed is named. */
export type RequestOptions = RequestBase & ({ followUnsureAdd?: false } | { followUnsureAdd: true; jobId: string });

interface RequestBase {
  requestId: string;
  timeoutMs: number;
  /**
   * Aborted when the client goes away: the job is cancelled. Aborted with INGRESS_STOPPING by the
   * ingress's own shutdown: its worker logs the cut as a 503, not as a client that left.
   */
  signal?: AbortSignal;
  /**
   * Receives stream chunks as the worker produces them. A promise returned says the client is
   * behind: the worker pauses the job until it resolves ('drained'), or for good ('gone').
   */
  onChunk?: (chunk: string) => void | Promise<CaughtUp | void>;
  /**
   * A stream's credit window in characters: the worker sends at most this far ahead of what
   * `onChunk` has written through (it said nothing was left waiting), whenever a pause comes.
   */
  windowChars?: number;
  /** Its fair rank as a BullMQ priority: lower served first (see `FairShares`). */
  priority?: number;
  /**
   * Whose work the job is, so the worker that takes it frees its place in its tenant's line; a
   * job `listed` goes on BullMQ's wait list, ahead of every prioritized job.
   */
  tenant?: Tenant;
  /** Its hold on its caller's quota, kept in the job's envelope (`JobEnvelope.hold`). */
  hold?: string;
  /** The sender's span as a W3C traceparent (`JobEnvelope.traceparent`); unset with tracing off. */
  traceparent?: string;
  /**
   * Called when the job will never run: it could not be enqueued, or was removed while it waited
   * (`removed` then says how: a job a worker took once has freed its fair place already).
   */
  onUnrun?: (removed?: RemovedJob) => void;
  /** Called once the job is on its queue. */
  onQueued?: () => void;
  /**
   * The job's id; default a random one. The gateway names each request's job (its request log
   * row's key); a batch worker names its lines' jobs, so a job is added once however often its
   * line is fed, and its reply can be followed after a takeover.
   */
  jobId?: string;
  /**
   * When the add fails, Redis may still have taken the job: follow it rather than give it up (a
   * batch line, whose job sent again would run, and be charged, twice; its caller ends the wait
   * when it sees the job missing from the queue, or at the time-out). Only for a named job
   * (`RequestOptions`).
   */
  followUnsureAdd?: boolean;
  /** When the request arrived (epoch ms): the job's timestamp, which its worker reads. Default now. */
  queuedAt?: number;
  /**
   * About how long the payload is as JSON (the request body's length). Past
   * PAYLOAD_INLINE_MAX_CHARS the payload goes beside the job rather than in it (payload-beside.ts).
   */
  payloadChars?: number;
  /**
   * The JSON of the payload's `request` as the client sent it, when its route's schema gives the
   * body back as it came (no defaults or transforms): a payload beside its job is then written
   * with these bytes in its place, not a serialisation of the parsed value (JSON.stringify of a
   * 10 MB prompt held the gateway's event loop 45 ms; of 18 MB of non-ASCII text, 120 ms).
   */
  requestJson?: Buffer;
}


/**
 * A payload's JSON in parts: its fields but `request` serialised, then the request's JSON as it
 * came (a leading byte-order mark dropped: it is no JSON whitespace), then the closing brace.
 */
function withRequestJson(payload: unknown, requestJson: Buffer): (string | Buffer)[] {
  const { request: _request, ...rest } = payload as Record<string, unknown>;
  const head = JSON.stringify(rest);
  const bom = requestJson[0] === 0xef && requestJson[1] === 0xbb && requestJson[2] === 0xbf;
  return [`${head.slice(0, -1)}${head === '{}' ? '' : ','}"request":`, bom ? requestJson.subarray(3) : requestJson, '}'];
}

/** A job removed from its queue before it ran, as its remover may give back what it held. */
export interface RemovedJob {
  data: QueuedEnvelope<unknown>;
  /**
   * A worker took it once (and freed its fair place) before it went back to wait: its worker died
   * and BullMQ put it back. Its hold is still held; its place is not.
   */
  taken: boolean;
}

type Claiming = Redis & { gwClaimWaitingJob(wait: string, prioritized: string, delayed: string, paused: string, jobId: string): Promise<number> };

/**
 * Removes a job that is still waiting, and its payload beside it; resolves with the removed job
 * (whose hold and fair place its remover gives back), or undefined when it removed none. Exactly
 * one caller gets it: the job is first taken out of the lists a worker fetches from, in one
 * script (`gwClaimWaitingJob`), so neither a worker nor a second remover (a cancel and a
 * withdrawal of one job, say) can have it too. BullMQ's own `remove`, which then clears the rest,
 * answers 1 for a job that is not there at all, and would count a job that ran, or that another
 * caller removed, as removed by this one (its hold given back twice, its request logged twice).
 */
async function removeIfWaiting(redis: Redis, queue: Queue, jobId: string): Promise<RemovedJob | undefined> {
  try {
    const { wait, prioritized, delayed, paused } = queue.keys;
    if ((await (redis as Claiming).gwClaimWaitingJob(wait!, prioritized!, delayed!, paused!, jobId)) !== 1) return undefined;
    // Claimed: out of every list, its data still there until the remove (a job at work or gone
    // costs the claim alone, not a read of its data).
    const job = await queue.getJob(jobId);
    await queue.remove(jobId);
    if (!job) return undefined;
    const data = job.data as QueuedEnvelope<unknown>;
    if (data.payloadKey !== undefined) dropPayload(redis, data.payloadKey);
    return { data, taken: job.attemptsStarted > 0 };
  } catch {
    return undefined;
  }
}

/**
 * A job leaves Redis when it ends, however it ends: completed, or failed (which only a job that
 * stalled twice, its worker killed, does; a handler's failure is a reply, not a failed job).
 * A failed job kept its payload (up to BODY_LIMIT_BYTES) for as long as it stayed in the failed
 * set; nobody reads that set, and the worker's log says why the job ended. A client made with
 * `keepFinishedOneIn` keeps a recent sample instead, without their payloads (finished-jobs.ts).
 */
export const defaultJobOptions = {
  ...REMOVED_WHEN_FINISHED,
  attempts: 1,
} as const;

/**
 * Rejects at the time-out (a 504; Retry-After: a job lost with a Redis Cluster master it was on,
 * or a slow upstream, may do better next time) or when `signal` aborts (the client left).
 */
function giveUpAfter(timeoutMs: number, signal: AbortSignal | undefined): { givenUp: Promise<never>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const givenUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(timedOut(`the request did not complete within ${timeoutMs} ms`, 1));
    }, timeoutMs);
    if (signal) {
      onAbort = () => reject(clientCancelled());
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  givenUp.catch(() => {});
  return {
    givenUp,
    clear() {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * The ingress's way to run a job and await its answer: registers with the reply inbox,
 * enqueues, and resolves with the worker's result, or rejects with its error, a 504 at the
 * deadline, or a cancellation when the client leaves. A job nobody waits for is cancelled.
 */
export class JobClient {
  private readonly redis: Redis;
  private readonly inbox: ReplyInbox;
  /** How many BullMQ queues the completion and audio queues are split into. */
  readonly shards: number;
  private readonly queues = new Map<QueueName, Queue[]>();
  /** Next shard of each queue, round robin. */
  private readonly turn = new Map<QueueName, number>();
  private readonly keepFinishedOneIn: number;
  /** Jobs added so far, for the one in `keepFinishedOneIn` kept once finished. */
  private added = 0;

  /**
   * `shards`: how many BullMQ queues the completion and audio queues are split into (QUEUE_SHARDS).
   * `keepFinishedOneIn`: one job in this many stays in its queue's completed set once it ends, and
   * every job that fails in its failed set, a recent few (KEPT_COMPLETED, KEPT_FAILED), for the
   * queue dashboard (0: none; the default); not for jobs whose ids are reused (a batch line's),
   * which an add would take for the finished one.
   */
  constructor(redis: Redis, inbox: ReplyInbox, { shards = 1, keepFinishedOneIn = 0 }: { shards?: number; keepFinishedOneIn?: number } = {}) {
    this.redis = redis;
    this.inbox = inbox;
    this.shards = shards;
    this.keepFinishedOneIn = keepFinishedOneIn;
    defineLuaScripts(redis, queueScripts);
  }

  /** Every shard of a queue (one BullMQ queue each; see `shardPrefixes`). */
  shardsOf(name: QueueName): Queue[] {
    let queues = this.queues.get(name);
    if (!queues) {
      queues = shardPrefixes(name, this.shards).map((prefix) => {
        const queue = new Queue(name, { connection: this.redis, prefix, defaultJobOptions, streams: { events: { maxLen: 1000 } } });
        queue.on('error', () => {});
        return queue;
      });
      this.queues.set(name, queues);
    }
    return queues;
  }

  /** The shard the next job of a queue goes to: each in turn. */
  private nextShard(name: QueueName): Queue {
    const queues = this.shardsOf(name);
    const turn = this.turn.get(name) ?? 0;
    this.turn.set(name, (turn + 1) % queues.length);
    return queues[turn % queues.length]!;
  }

  /** The job's result, parsed. */
  async request<P, R>(queueName: QueueName, payload: P, options: RequestOptions): Promise<R> {
    return JSON.parse(await this.requestText(queueName, payload, options)) as R;
  }

  /**
   * The job's result as the JSON text the worker wrote, to relay to a client byte for byte
   * (no parse and re-serialisation on the way through).
   */
  async requestText<P>(queueName: QueueName, payload: P, options: RequestOptions): Promise<string> {
    // A client already gone gets no job at all, and what was held for it is given back.
    if (options.signal?.aborted || this.redis.status !== 'ready') {
      options.onUnrun?.();
      throw options.signal?.aborted ? clientCancelled() : redisUnavailableError();
    }
    const jobId = options.jobId ?? randomUUID();
    const deadline = Date.now() + options.timeoutMs;
    const heading = {
      requestId: options.requestId,
      replyTo: this.inbox.id,
      deadline,
      stream: options.onChunk !== undefined,
      ...(options.onChunk && options.windowChars ? { window: options.windowChars } : {}),
      ...(options.priority ? { priority: options.priority } : {}),
      ...(options.tenant ? { tenant: options.tenant } : {}),
      ...(options.hold ? { hold: options.hold } : {}),
      ...(options.traceparent ? { traceparent: options.traceparent } : {}),
    };
    const flow = options.onChunk && this.withFlowControl(jobId, options.onChunk, options.windowChars);
    const reply = this.inbox.expect(jobId, flow?.onChunk);
    const { givenUp, clear } = giveUpAfter(options.timeoutMs, options.signal);
    // Either may settle while the job is being added; they are awaited below.
    reply.catch(() => {});
    const queue = this.nextShard(queueName);
    // On a cluster the add waits out a failover of its shard's master (see createRedis), within
    // the deadline: a job that could not be queued in time is a 503 with Retry-After.
    // A job first of its tenant's line goes on BullMQ's wait list, served before every prioritized
    // job (a newcomer goes first, as in FairOrder), for three Redis commands less than the
    // prioritized set; its envelope keeps its rank for the worker.
    const bullPriority = options.priority && !options.tenant?.listed ? options.priority : undefined;
    const timestamp = options.queuedAt ?? Date.now();
    // Management jobs are few and each worth seeing on the board: every one is kept.
    const finished = this.keepFinishedOneIn > 0 ? finishedOptionsFor(queueName === 'admin' ? 0 : this.added++, this.keepFinishedOneIn) : {};
    const jobOptions: JobsOptions = bullPriority ? { jobId, priority: bullPriority, timestamp, ...finished } : { jobId, timestamp, ...finished };
    // A large payload is stored first, then its job: no worker takes a job whose payload is still
    // on its way.
    const payloadKey = (options.payloadChars ?? 0) > PAYLOAD_INLINE_MAX_CHARS ? newPayloadKey() : undefined;
    // The queue made ready first: a new Queue loads BullMQ's scripts onto this shared connection,
    // and a payload pushed while it did broke the connection's auto-pipelining ("results[i] is not
    // iterable", every later command hung), when a client's first job had a large payload.
    const added = payloadKey
      ? queue.waitUntilReady()
        .then(() => putPayload(this.redis, payloadKey, options.requestJson ? withRequestJson(payload, options.requestJson) : [JSON.stringify(payload)], deadline))
        .then(() => queue.add(queueName, { ...heading, payloadKey } satisfies QueuedEnvelope<P>, jobOptions))
      : queue.add(queueName, { ...heading, payload } satisfies QueuedEnvelope<P>, jobOptions);
    added.then(() => options.onQueued?.(), () => {});
    let abandoned = false;
    /** The add failed, yet Redis may have taken the job before it went away. */
    let mayBeQueued = false;
    try {
      try {
        await Promise.race([added, givenUp]);
      } catch (error) {
        abandoned = error instanceof GatewayError;
        if (abandoned && (error as GatewayError).code === 'cancelled') throw error;
        if (!abandoned && options.followUnsureAdd) {
          // Followed rather than given up (a batch line): see followUnsureAdd.
          mayBeQueued = true;
        } else {
          // The add failed: the job will never run.
          if (!abandoned) {
            options.onUnrun?.();
            if (payloadKey) dropPayload(this.redis, payloadKey);
          }
          throw redisUnavailableError();
        }
      }
      return await Promise.race([reply, givenUp]);
    } catch (error) {
      this.inbox.forget(jobId);
      const failure = GatewayError.from(error);
      // A job given up on is removed once it is queued (an add still waiting may land later); one
      // removed unrun, or never queued, gives back what it held.
      if (abandoned || failure.code === 'timeout' || failure.code === 'cancelled') {
        const unrun = payloadKey ? (removed?: RemovedJob) => { dropPayload(this.redis, payloadKey); options.onUnrun?.(removed); } : options.onUnrun;
        // Its worker logs the cut as the gateway's (503, 504) when its client did not leave.
        const why = failure.code === 'timeout' ? 'deadline' : options.signal?.reason === INGRESS_STOPPING ? 'stopping' : undefined;
        if (mayBeQueued) this.cancelUnsure(queue, jobId, unrun, why);
        else void added.then(() => this.cancel(queue, jobId, unrun, why), () => unrun?.());
      }
      throw failure;
    } finally {
      clear();
      flow?.stop();
    }
  }

  /**
   * The reply of a job this inbox's owner enqueued before (a batch worker that took over a batch
   * whose lines were in flight): resolves with its JSON text, or rejects at the time-out or when
   * `signal` aborts. Register before the inbox starts reading, or a reply already written is missed.
   */
  async follow(jobId: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<string> {
    const reply = this.inbox.expect(jobId);
    const { givenUp, clear } = giveUpAfter(options.timeoutMs, options.signal);
    try {
      return await Promise.race([reply, givenUp]);
    } finally {
      this.inbox.forget(jobId);
      clear();
    }
  }

  /** Whether a job is still in a queue (waiting, delayed, running), on any of its shards. */
  async exists(name: QueueName, jobId: string): Promise<boolean> {
    const states = await Promise.all(this.shardsOf(name).map((queue) => queue.getJobState(jobId)));
    return states.some((state) => state !== 'unknown' && state !== 'completed' && state !== 'failed');
  }

  /**
   * `onChunk`, pausing the job while the promise it returns (its client catching up) is pending.
   * The pause is renewed while it lasts (a worker lets an unrenewed pause lapse), so a client that
   * stops reading holds its job paused until it reads again or is dropped.
   *
   * With a window, it also credits the worker with what the client has taken, half a window at a
   * time: the pause is the quick word, the window the bound that holds whatever the pause's timing
   * (a fast upstream can send megabytes in the pause's round trip). A stream shorter than half a
   * window costs no message at all. A credit lost to a reconnect is sent again while the stream
   * stands still.
   */
  private withFlowControl(jobId: string, onChunk: (chunk: string) => void | Promise<CaughtUp | void>, windowChars = 0) {
    let paused = false;
    let received = 0;
    let credited = 0;
    let resend: NodeJS.Timeout | undefined;
    /** The stream is over for this ingress (ended, given up, or its client gone): no more credit. */
    let stopped = false;
    let renew: NodeJS.Timeout | undefined;
    const pause = () => publishJobControl(this.redis, { kind: 'pause', jobId });
    const sendCredit = () => publishJobControl(this.redis, { kind: 'credit', jobId, chars: credited });
    /** Everything received has been written through: credit it, once half a window has come. */
    const takenUp = () => {
      if (stopped || windowChars <= 0 || received - credited < windowChars / 2) return;
      credited = received;
      sendCredit();
      if (resend) resend.refresh();
      else (resend = setInterval(sendCredit, CREDIT_RESEND_MS)).unref();
    };
    const stop = () => {
      stopped = true;
      clearInterval(resend);
      clearInterval(renew);
      resend = undefined;
    };
    return {
      stop,
      onChunk: (chunk: string) => {
        received += chunk.length;
        resend?.refresh();
        const caughtUp = onChunk(chunk);
        if (!caughtUp) return takenUp();
        if (paused) return;
        paused = true;
        pause();
        renew = setInterval(pause, PAUSE_RENEW_MS);
        renew.unref();
        void caughtUp.then((how) => {
          clearInterval(renew);
          // A client that left is not caught up: the job stays paused until its cancel (which
          // follows) stops it, rather than streaming on at full speed to nobody in between; what
          // still comes for it neither pauses it again nor earns it credit.
          if (how === 'gone') return stop();
          paused = false;
          publishJobControl(this.redis, { kind: 'resume', jobId });
          takenUp();
        });
      },
    };
  }

  /**
   * `cancel` by queue name, for a job added with a `jobId` of the caller's (its shard unknown):
   * removed from whichever shard holds it while it waits (then `onUnrun`), and stopped where it runs.
   */
  cancelById(name: QueueName, jobId: string, onUnrun?: (removed: RemovedJob) => void): void {
    publishJobControl(this.redis, { kind: 'cancel', jobId });
    void this.removeFromShards(name, jobId).then((removed) => {
      if (removed) onUnrun?.(removed);
    });
  }

  /**
   * Withdraws a job added with a `jobId` of the caller's, unless it has begun: removed from
   * whichever shard holds it while it waits (resolves with its data: it will never run, and gave
   * nothing back yet: the caller does); a worker that holds it and has not begun it (waiting for
   * a channel's room) stops it and answers `withdrawn`; one begun runs on and answers as usual.
   */
  async withdrawById(name: QueueName, jobId: string): Promise<RemovedJob | undefined> {
    publishJobControl(this.redis, { kind: 'withdraw', jobId });
    return this.removeFromShards(name, jobId);
  }

  /** Removes a job while it waits, from whichever shard holds it: its data, or undefined. */
  private async removeFromShards(name: QueueName, jobId: string): Promise<RemovedJob | undefined> {
    const removed = await Promise.all(this.shardsOf(name).map((queue) => removeIfWaiting(this.redis, queue, jobId)));
    return removed.find((job) => job !== undefined);
  }

  /**
   * `cancel` for a job whose add failed and may have happened all the same: one running is told to
   * stop (its worker settles what it held); one waiting is removed, and one not in the queue
   * (never added, or run and gone) gives back what it held: a hold already settled is not charged
   * again by that.
   */
  private cancelUnsure(queue: Queue, jobId: string, onUnrun?: (removed?: RemovedJob) => void, why?: IngressCut): void {
    publishJobControl(this.redis, { kind: 'cancel', jobId, why });
    void queue.getJobState(jobId).then(async (state) => {
      // A job that ended is as gone as one never added (kept finished jobs are in a set a while).
      if (state === 'unknown' || state === 'completed' || state === 'failed') onUnrun?.();
      else {
        const removed = await removeIfWaiting(this.redis, queue, jobId);
        if (removed) onUnrun?.(removed);
      }
    }, () => {});
  }

  /** Removes a job still waiting, and tells whichever worker holds it to stop (`why`: the ingress's own cut, its client still there). */
  cancel(queue: Queue, jobId: string, onUnrun?: (removed?: RemovedJob) => void, why?: IngressCut): void {
    publishJobControl(this.redis, { kind: 'cancel', jobId, why });
    void removeIfWaiting(this.redis, queue, jobId).then((removed) => { if (removed) onUnrun?.(removed); });
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].flat().map((q) => q.close()));
  }
}
