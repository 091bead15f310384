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
