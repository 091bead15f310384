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
  /** BullMQ priority it was enqueued with (unset: interactive; higher: later). */
  priority?: number;
  payload: P;
}
