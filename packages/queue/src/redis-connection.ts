import { Cluster, Redis as Server, type RedisOptions } from 'ioredis';
import type { RedisClient, RedisTarget } from '@gateway/config';
import { GatewayError } from '@gateway/contracts';

/** A connection to the server or the cluster the configuration names. */
export type Redis = RedisClient;

export interface ConnectionOptions {
  /** Name shown by CLIENT LIST, for operators. */
  name: string;
  /** Blocking readers and BullMQ workers must wait forever for Redis; commands of a request must not. */
  blocking?: boolean;
  /**
   * Fail commands at once while Redis is unreachable instead of queueing them until it is back
   * (the gateway: a request gets a quick 503, not a hang until its time-out).
   */
  failFast?: boolean;
}

/**
 * Opens an ioredis connection with the settings this project relies on: auto-pipelining
 * (commands of concurrent requests share round trips) and unlimited reconnects with a short
 * back-off, so every process heals by itself when Redis comes back. On a Redis Cluster, an
 * ioredis Cluster with the same settings, which follows MOVED and ASK redirections, refreshes
 * its slot table, and retries a command while a failover promotes a replica.
 */
export function createRedis(target: RedisTarget, { name, blocking = false, failFast = false }: ConnectionOptions): Redis {
  const options: RedisOptions = {
    connectionName: name,
    enableAutoPipelining: !blocking,
    maxRetriesPerRequest: blocking ? null : 2,
    retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    enableReadyCheck: true,
    enableOfflineQueue: !failFast,
  };
  const redis = typeof target === 'string' ? new Server(target, options) : new Cluster(target.cluster, {
    redisOptions: { ...options, password: target.password, tls: target.tls ? {} : undefined },
    // Off on a cluster: measured in test/redis-cluster.e2e.test.ts, about one start in two left
    // the first BullMQ script call (EVALSHA answered NOSCRIPT, retried as EVAL inside an
    // auto-pipeline) waiting forever; with it off, none did.
    enableAutoPipelining: false,
    enableOfflineQueue: options.enableOfflineQueue,
    enableReadyCheck: true,
    clusterRetryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    // While a master fails over, commands for its slots wait and are retried.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    // TLS certificates of managed clusters name the hosts given, not the addresses they resolve to.
    dnsLookup: (address, callback) => callback(null, address),
  });
  // Errors surface through the commands that fail; the event would otherwise crash the process.
  redis.on('error', () => {});
  return redis;
}

/** Resolves once the connection is ready, or rejects after `timeoutMs`. */
export async function waitForRedis(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis did not become ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}

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
  new GatewayError({ status: 503, code: 'overloaded', message: 'Redis is unavailable for a moment (or failing over); try again shortly', retryAfter: 1 });
