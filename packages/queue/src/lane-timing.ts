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
 *   cluster, a wait caught by a failover is still being retried by ioredis then. So on a cluster
 *   it outlasts the failover wait (REDIS_FAILOVER_WAIT_MS): the wait is carried to the promoted
 *   replica instead of being dropped mid-failover (a reopened connection also recovers, since
 *   the cluster ready check that left it pending for good is off: failover-reconnect.test.ts).
 *   A job added wakes the lane at once either way.
 * - `lockDuration`: how long a job's lock lasts unrenewed (5 s). A lock is renewed every
 *   LOCK_RENEW_MS; one that lapses makes its job stalled, run again by the next worker to take
 *   it. On a cluster, the renewals of a master failing over wait the failover out, and the
 *   promoted replica expires a lock its master had set 5 s before: every job in flight on that
 *   master was run a second time by its stalled check while its first run was finishing (3
 *   upstream calls of 32 made twice, test/redis-cluster.e2e.test.ts with 1.5 s calls). So on a
 *   cluster a lock outlasts the failover wait, as every other command does; the stalled check
 *   keeps its pace, so a worker that died has its jobs run again after about that long.
 */
export function laneTimingOf(target: RedisTarget): { runRetryDelay: number; drainDelay: number; lockDuration: number; lockRenewTime: number; stalledInterval: number } {
  const failoverWaitMs = typeof target === 'string' ? 0 : (target.failoverWaitMs ?? DEFAULT_FAILOVER_WAIT_MS);
  return {
    runRetryDelay: 500,
    drainDelay: Math.max(5, Math.ceil(failoverWaitMs / 1000)),
    // Renewed every LOCK_RENEW_MS, a lock has at least lockDuration - LOCK_RENEW_MS left when its master goes.
    lockDuration: LOCK_DURATION_MS + failoverWaitMs,
    lockRenewTime: LOCK_RENEW_MS,
    stalledInterval: LOCK_RENEW_MS,
  };
}

/** A job's lock on one Redis: a worker killed has its jobs run again 5-7.5 s later. */
const LOCK_DURATION_MS = 5_000;
/** How often a worker renews its jobs' locks, and looks for stalled ones. */
const LOCK_RENEW_MS = 2_500;
