import type { QueuedEnvelope } from '@gateway/contracts';

/**
 * What a queue keeps of its finished jobs, for the queue dashboard: removed at once, an operator
 * who opens the board after the fact sees 0 jobs in every state. BullMQ trims each set as a job
 * ends (`removeOnComplete`/`removeOnFail` as `{ count, age }`), in the script that ends it.
 *
 * A finished job keeps who asked and what, never its payload (prompts, speech text; a management
 * job's hashes, digests and sealed keys): the worker replaces its data with `finishedJobData`
 * before the job ends (job-worker.ts).
 */
export const KEPT_COMPLETED = { count: 1000, age: 3600 } as const;
/** Failed jobs (only a job whose worker died twice under it fails) are kept longer: they are rare and worth a look. */
export const KEPT_FAILED = { count: 1000, age: 24 * 3600 } as const;

/** A job ends and leaves Redis at once (a batch line's job: its id is reused when the line is fed again). */
export const REMOVED_WHEN_FINISHED = { removeOnComplete: true, removeOnFail: true } as const;
export const KEPT_WHEN_FINISHED = { removeOnComplete: KEPT_COMPLETED, removeOnFail: KEPT_FAILED } as const;

/** Whether a job added with these options stays in its queue once finished. */
export const keptWhenFinished = (opts: { removeOnComplete?: unknown }) => opts.removeOnComplete !== undefined && opts.removeOnComplete !== true;

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
