import type { FastifyInstance } from 'fastify';
import { forbidden, QueueName, Role } from '@gateway/contracts';
import type { GatewayMetrics } from '@gateway/observability';
import type { JobClient, ReplyInbox } from '@gateway/queue';
import type { UserStore } from '@gateway/store';
import { actorOfRequest } from '../auth/request-auth.ts';
import type { OperationsSnapshot } from './operations-snapshot.ts';

export interface MetricsOptions {
  metrics: GatewayMetrics;
  jobs: JobClient;
  inbox: ReplyInbox;
  users: UserStore;
  /** Queues' workers and drain, channels' slots and states, read at scrape time. */
  operations: OperationsSnapshot;
}

const CONDITIONS = ['enabled', 'cooling_down', 'disabled', 'auto_disabled'] as const;

/** `GET /metrics` (Prometheus text), for administrators: send an admin's access token. */
export async function metricsRoutes(app: FastifyInstance, options: MetricsOptions): Promise<void> {
  app.get('/metrics', async (request, reply) => {
    const actor = await actorOfRequest(options.users, request);
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
    const { metrics } = options;
    const [queues, channels] = await Promise.all([options.operations.queues(), options.operations.channelStates()]);
    for (const q of queues) {
      metrics.queueWorkers.set({ queue: q.queue }, q.processes.length);
      metrics.queueConcurrency.set({ queue: q.queue }, q.processes.reduce((sum, p) => sum + p.concurrency, 0));
      metrics.queueFinished.set({ queue: q.queue }, q.finished);
    }
    // Labelled by channel id: a name is an administrator's text, kept out of labels.
    metrics.channelInFlight.reset();
    metrics.channelLimit.reset();
    metrics.channelState.reset();
    for (const c of channels) {
      const channel = String(c.id);
      metrics.channelInFlight.set({ channel }, c.in_flight);
      metrics.channelLimit.set({ channel }, c.max_concurrency);
      for (const state of CONDITIONS) metrics.channelState.set({ channel, state }, c.condition === state ? 1 : 0);
    }
    return reply.type(options.metrics.registry.contentType).send(await options.metrics.registry.metrics());
  });
}
