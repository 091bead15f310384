import type { FastifyInstance } from 'fastify';
import type { Redis } from '@gateway/queue';

export interface HealthOptions {
  redis: Redis;
  /** True once the gateway has begun to shut down. */
  isStopping: () => boolean;
  /** Why the management API cannot serve yet (ADMIN_TOKEN not yet root's), or undefined. */
  notYetServing?: () => Promise<string | undefined>;
}

/**
 * `/healthz`: the process is up. `/readyz`: it can serve (Redis answers, ADMIN_TOKEN is root's,
 * not stopping), and why not when it cannot. Not @fastify/under-pressure: its status route answers a failed check
 * without the reason, and its load shedding would refuse requests on event-loop delay, which
 * the queue backlog check (`intake/queue-backlog.ts`) already decides with the queue's own figures.
 */
export async function healthRoutes(app: FastifyInstance, options: HealthOptions): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    if (options.isStopping()) return reply.status(503).send({ status: 'unavailable', reason: 'shutting down' });
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        options.redis.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('Redis did not answer within 1 s')), 1000);
        }),
      ]);
    } catch (error) {
      return reply.status(503).send({ status: 'unavailable', reason: `redis: ${(error as Error).message}` });
    } finally {
      clearTimeout(timer);
    }
    try {
      const reason = await options.notYetServing?.();
      return reason ? reply.status(503).send({ status: 'unavailable', reason }) : { status: 'ok' };
    } catch (error) {
      return reply.status(503).send({ status: 'unavailable', reason: `redis: ${(error as Error).message}` });
    }
  });
}
