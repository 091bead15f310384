import { DEFAULT_FAILOVER_WAIT_MS, type RedisTarget } from '@gateway/config';

/**
 * BullMQ Worker timings of a lane, chosen so that a lane is back at work as soon as Redis is:
 *
 * - `runRetryDelay`: a fetch or a finish that failed (Redis down, or its cluster master failing
 *   over for longer than ioredis retries) is tried again after 0.5 s, not BullMQ's 15 s, which
 *   left the dead master's shard idle for 15 s after a failover (test/redis-cluster.e2e.test.ts),
 *   while its waiting requests ran into their deadline.
 * - `drainDelay`: seconds an idle lane blocks waiting for a job (BullMQ's default 5). BullMQ
 *   drops and reopens a blocking connection that has not answered a second past it; on a
 *   cluster, a wait caught by a failover is still being retried by ioredis then, and the reopened
 *   connection was measured to leave the dead master's shard unserved for 20 s after the
 *   failover. So on a cluster it outlasts the failover wait (REDIS_FAILOVER_WAIT_MS); a job added
 *   wakes the lane at once either way.
 */
export function laneTimingOf(target: RedisTarget): { runRetryDelay: number; drainDelay: number } {
  const failoverWaitMs = typeof target === 'string' ? 0 : (target.failoverWaitMs ?? DEFAULT_FAILOVER_WAIT_MS);
  return { runRetryDelay: 500, drainDelay: Math.max(5, Math.ceil(failoverWaitMs / 1000)) };
}
