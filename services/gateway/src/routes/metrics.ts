import type { FastifyInstance } from 'fastify';
import { forbidden, QueueName, Role } from '@gateway/contracts';
import type { GatewayMetrics } from '@gateway/observability';
import type { JobClient, ReplyInbox } from '@gateway/queue';
import type { UserStore } from '@gateway/store';
import { authenticateAccessToken } from '../auth/access-token.ts';

export interface MetricsOptions {
  metrics: GatewayMetrics;
  jobs: JobClient;
  inbox: ReplyInbox;
  users: UserStore;
}

/** `GET /metrics` (Prometheus text), for administrators: send an admin's access token. */
export async function metricsRoutes(app: FastifyInstance, options: MetricsOptions): Promise<void> {
  app.get('/metrics', async (request, reply) => {
    const actor = await authenticateAccessToken(options.users, request.headers);
    if (actor.role < Role.admin) throw forbidden('only administrators may read the metrics');
    const states = ['waiting', 'active', 'delayed', 'failed', 'prioritized'] as const;
    await Promise.all(
      Object.values(QueueName).map(async (queue) => {
        // Summed over the queue's shards.
        const shards = await Promise.all(options.jobs.shardsOf(queue).map((shard) => shard.getJobCounts(...states)));
        for (const state of states) options.metrics.queueJobs.set({ queue, state }, shards.reduce((sum, counts) => sum + (counts[state] ?? 0), 0));
      }),
    );
    options.metrics.waitingReplies.set(options.inbox.waiting);
    return reply.type(options.metrics.registry.contentType).send(await options.metrics.registry.metrics());
  });
}
