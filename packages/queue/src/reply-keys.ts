/** Redis keys and channels of the reply path and of queue accounting. */
export const replyStreamKey = (ingressId: string) => `gw:replies:${ingressId}`;
/**
 * Channel on which an ingress tells the workers that nobody waits for a job any more, or that a
 * stream's client is slow (a `JobControl`: job-control.ts).
 */
export const CANCEL_CHANNEL = 'gw:cancel';
/**
 * A pause lapses by itself after PAUSE_LAPSE_MS (its resume may be lost to a reconnect, or its
 * ingress may die); the ingress renews it every PAUSE_RENEW_MS for as long as its client's
 * socket stays full, so backpressure holds however long the client takes.
 */
export const PAUSE_LAPSE_MS = 10_000;
export const PAUSE_RENEW_MS = 3_000;
/** A stream's last credit is sent again this often while no chunk comes (it may have been lost). */
export const CREDIT_RESEND_MS = 2_000;
/** An unread reply stream outlives its ingress by this long, then vanishes. */
export const REPLY_STREAM_TTL_MS = 120_000;
/**
 * A batch's reply stream (its inbox id starts `batch_`) is kept a day: replies written while no
 * batch worker held the batch wait there for the one that takes it over, so a line that ran is
 * not run (and charged) again. At most a batch's window of replies.
 */
export const BATCH_REPLY_STREAM_TTL_MS = 24 * 3_600_000;
export const replyStreamTtlMs = (ingressId: string) => (ingressId.startsWith('batch_') ? BATCH_REPLY_STREAM_TTL_MS : REPLY_STREAM_TTL_MS);

/** Reply types: a result, an error, a stream chunk. */
export const ReplyType = { result: 'r', error: 'e', chunk: 'c' } as const;

/**
 * A reply stream entry holds one or more replies, each a field and its value: the field is the
 * reply's type (one character) and its job id, the value its data.
 */
export const replyField = (type: string, jobId: string) => `${type}${jobId}`;

/** Ever-growing count of jobs the workers of a queue have finished (admission control's drain rate). */
export const drainedCounterKey = (queue: string) => `gw:drained:${queue}`;

/** Present while an ingress lives (refreshed every INGRESS_HEARTBEAT_MS, expiring after INGRESS_TTL_MS). */
export const ingressKey = (ingressId: string) => `gw:ingress:${ingressId}`;
export const INGRESS_HEARTBEAT_MS = 3_000;
export const INGRESS_TTL_MS = 10_000;
