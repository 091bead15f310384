import type { FastifyReply, FastifyRequest } from 'fastify';

const controllers = new WeakMap<FastifyRequest['raw'], AbortController>();

/**
 * Starts watching the client from the first moment of its request (an `onRequest` hook), so a
 * client that leaves at any point, even a few milliseconds after sending and before anything
 * was awaited, is seen leaving: its job is then never enqueued, or is cancelled.
 */
export function watchClient(request: FastifyRequest, reply: FastifyReply): void {
  const controller = new AbortController();
  controllers.set(request.raw, controller);
  const gone = () => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  if (request.raw.socket?.destroyed) gone();
  else reply.raw.once('close', gone);
}

/** Fires when the client goes away before its answer was sent. */
export function clientGoneSignal(request: FastifyRequest): AbortSignal {
  let controller = controllers.get(request.raw);
  if (!controller) {
    controller = new AbortController();
    controllers.set(request.raw, controller);
  }
  return controller.signal;
}

/**
 * Ends a request's wait for its job as its client's leaving would (the job is cancelled), with
 * `reason`, which `stoppedBy` reads: a gateway's shutdown past its deadline.
 */
export function cutShort(raw: FastifyRequest['raw'], reason: unknown): void {
  controllers.get(raw)?.abort(reason);
}

/** The reason `cutShort` gave, when the request was cut short rather than left by its client. */
export function cutReason(request: FastifyRequest): unknown {
  return controllers.get(request.raw)?.signal.reason;
}
