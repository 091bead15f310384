import type { FastifyReply } from 'fastify';

/** An AbortSignal that fires when the client goes away before its answer was sent. */
export function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
