/**
 * The envelope every job carries, whatever its queue: enough for the worker to answer the
 * very ingress instance that waits, and to give up on work nobody waits for any more.
 */
export interface JobEnvelope<P> {
  /** Request id, for following one request across processes. */
  requestId: string;
  /** Reply stream of the ingress instance that waits for this job. */
  replyTo: string;
  /** Epoch ms after which nobody waits for the answer. */
  deadline: number;
  /** True when the ingress relays the answer as a stream of chunks. */
  stream?: boolean;
  /**
   * A stream's credit window, in characters of chunks: the worker sends at most this far ahead of
   * what the ingress has credited (written through to its client). Unset: no window (an ingress
   * of before, which paused and resumed the job only).
   */
  window?: number;
  /** BullMQ priority it was enqueued with (unset: interactive; higher: later). */
  priority?: number;
  /** Whose work it is (model jobs): the worker that takes it frees its place in the tenant's fair line. */
  tenant?: { userId: number; tokenId: number; listed?: boolean };
  /**
   * Its hold on its caller's quota (model jobs; the payload's `caller.hold` too): here as well,
   * so a remover that did not admit the job gives it back without reading a payload beside it.
   */
  hold?: string;
  /**
   * The W3C traceparent of its sender's span (tracing on, the request sampled or not): the
   * worker's spans are its children, one trace across the hop. Ids and a flag, nothing secret.
   */
  traceparent?: string;
  payload: P;
}

/**
 * A job's data as it is queued: the envelope with its payload in it, or, for a large payload,
 * beside it (`payloadKey`: a Redis list of its slices, which the worker reads before it runs the job; see
 * @gateway/queue's payload-beside.ts). A worker of before this field cannot read the second
 * form: upgrade workers before gateways.
 */
export type QueuedEnvelope<P> = Omit<JobEnvelope<P>, 'payload'> & ({ payload: P; payloadKey?: undefined } | { payload?: undefined; payloadKey: string });

/**
 * Batch work ranks after every interactive job: batch jobs' BullMQ priorities start here
 * (`FairShares`). BullMQ's priorities go up to 2^21; interactive ranks stay below this.
 */
export const BATCH_RANK_BASE = 1_000_000;

/** Whether a job's BullMQ priority is batch work's. */
export const isBatchRank = (priority: number | undefined) => (priority ?? 0) >= BATCH_RANK_BASE;
