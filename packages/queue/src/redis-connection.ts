import type { RedisClient } from '@gateway/config';
import { overloaded } from '@gateway/contracts';

/** A connection to the server or the cluster the configuration names. */
export type Redis = RedisClient;

// Connections are made in @gateway/config (beside where Redis is configured), so that every
// package, the store included, makes them one way; re-exported here, where services look.
export { createRedis, waitForRedis, type ConnectionOptions } from '@gateway/config';

/**
 * True for the errors ioredis raises while Redis cannot be reached, or while a Redis Cluster
 * moves slots or promotes a replica (CLUSTERDOWN, TRYAGAIN, redirections and slot refreshes
 * that run out): failures that pass by themselves, answered 503 with Retry-After.
 */
export function isRedisUnavailable(error: unknown): boolean {
  const e = error as { name?: string; message?: string } | undefined;
  if (!e) return false;
  if (e.name === 'MaxRetriesPerRequestError' || e.name === 'ClusterAllFailedError') return true;
  return /Stream isn't writeable|Connection is closed|ECONNREFUSED|ECONNRESET|enableOfflineQueue|CLUSTERDOWN|TRYAGAIN|Too many Cluster redirections|Failed to refresh slots cache|None of startup nodes is available|Cluster isn't ready/i.test(e.message ?? '');
}

/** The 503 a request gets when Redis cannot be reached, or a cluster is failing over. */
export const redisUnavailableError = () =>
  overloaded('Redis is unavailable for a moment (or failing over); try again shortly');

/**
 * `work` (Redis commands, which on a cluster wait out a failover), or a 503 with Retry-After
 * once `deadline` (epoch ms) has passed first: a request waits for Redis within its deadline,
 * never past it. A Redis error is passed on as it is.
 */
export async function beforeDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(redisUnavailableError()), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
