import type { Queue } from 'bullmq';
import type { QueuedEnvelope } from '@gateway/contracts';

/**
 * What a queue keeps of its finished jobs, for the queue dashboard: removed at once, an operator
 * who opens the board after the fact sees 0 jobs in every state. BullMQ trims each set as a job
 * ends (`removeOnComplete`/`removeOnFail` as `{ count, age }`), in the script that ends it.
 *
 * A finished job keeps who asked and what, never its payload (prompts, speech text; a management
 * job's hashes, digests and sealed keys): the worker replaces its data with `finishedJobData`
 * once the job has completed or failed (job-worker.ts), never before: a job whose worker dies
 * between its run and its completion is run again, and needs its whole request.
 */
export const KEPT_COMPLETED = { count: 1000, age: 3600 } as const;
/** Failed jobs (only a job whose worker died twice under it fails) are kept longer: they are rare and worth a look. */
export const KEPT_FAILED = { count: 1000, age: 24 * 3600 } as const;

/** A job ends and leaves Redis at once (a batch line's job: its id is reused when the line is fed again). */
export const REMOVED_WHEN_FINISHED = { removeOnComplete: true, removeOnFail: true } as const;
export const KEPT_WHEN_FINISHED = { removeOnComplete: KEPT_COMPLETED, removeOnFail: KEPT_FAILED } as const;
/** A job of the many not sampled for the board: gone once completed, kept if it failed (rare, and worth a look). */
export const KEPT_IF_FAILED = { removeOnComplete: true, removeOnFail: KEPT_FAILED } as const;

type RemovalOptions = { removeOnComplete?: unknown; removeOnFail?: unknown };
const kept = (removal: unknown) => removal !== undefined && removal !== true;

/** Whether a job added with these options stays in its queue once completed. */
export const keptWhenFinished = (opts: RemovalOptions) => kept(opts.removeOnComplete);
/** Whether a job added with these options stays in its queue once failed. */
export const keptWhenFailed = (opts: RemovalOptions) => kept(opts.removeOnFail);

/**
 * What the `turn`th model job (0, 1, 2, …) keeps once finished when one in `oneIn` is kept for the
 * board (0: none). Keeping every job cost 7 Redis commands a request more (storing, trimming and
 * shrinking each), 12% of the hop's; one in 10 costs under one, and the board still shows a
 * recent sample of every queue. Every failed job is kept.
 */
export function finishedOptionsFor(turn: number, oneIn: number) {
  if (oneIn <= 0) return REMOVED_WHEN_FINISHED;
  return turn % oneIn === 0 ? KEPT_WHEN_FINISHED : KEPT_IF_FAILED;
}

/**
 * A finished job's data: the envelope without its payload, where it replied or what it held, and
 * of the payload only its operation and model. Given its own result, it gives the same.
 */
export function finishedJobData(data: QueuedEnvelope<unknown>): Record<string, unknown> {
  const { payload, payloadKey: _payloadKey, replyTo: _replyTo, hold: _hold, window: _window, ...kept } = data;
  return payload === undefined || payload === null || typeof payload !== 'object' ? kept : { ...kept, payload: whatWasAsked(payload as Record<string, unknown>) };
}

/** A payload's operation and model (a model job's), or its operation alone (a management job's). */
function whatWasAsked(payload: Record<string, unknown>): Record<string, string> {
  const request = payload.request as Record<string, unknown> | undefined;
  const model = typeof payload.model === 'string' ? payload.model : typeof request?.model === 'string' ? request.model : undefined;
  return {
    ...(typeof payload.operation === 'string' ? { operation: payload.operation } : {}),
    ...(model !== undefined ? { model } : {}),
  };
}

/**
 * Makes small the finished jobs a worker killed outright left whole: one ended in the moment
 * between its end and the write that makes it small. Run as a worker starts, on each shard of its
 * queue (a few thousand reads at most: the sets are trimmed to KEPT_COMPLETED and KEPT_FAILED).
 * A finished job's data has no reply address; one that still has it was left whole. Returns how
 * many it made small.
 */
export async function shrinkLeftWhole(queue: Queue): Promise<number> {
  const jobs = await queue.getJobs(['completed', 'failed'], 0, Math.max(KEPT_COMPLETED.count, KEPT_FAILED.count) - 1);
  const whole = jobs.filter((job) => job && (job.data as Partial<QueuedEnvelope<unknown>> | undefined)?.replyTo !== undefined);
  await Promise.all(whole.map((job) => job.updateData(finishedJobData(job.data as QueuedEnvelope<unknown>))));
  return whole.length;
}
