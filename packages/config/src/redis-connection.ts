import { Cluster, Redis as Server, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisClient, RedisTarget } from './redis-target.ts';

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

/** The settings of one server's connection (also each cluster node's). */
function serverOptions({ name, blocking = false, failFast = false }: ConnectionOptions): RedisOptions {
  return {
    connectionName: name,
    enableAutoPipelining: !blocking,
    maxRetriesPerRequest: blocking ? null : 2,
    retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    enableReadyCheck: true,
    enableOfflineQueue: !failFast,
  };
}

/** The settings of a cluster connection around its nodes' `redisOptions`. */
function clusterOptions(redisOptions: RedisOptions): ClusterOptions {
  return {
    redisOptions,
    // Off on a cluster: measured in test/redis-cluster.e2e.test.ts, about one start in two left
    // the first BullMQ script call (EVALSHA answered NOSCRIPT, retried as EVAL inside an
    // auto-pipeline) waiting forever; with it off, none did.
    enableAutoPipelining: false,
    enableOfflineQueue: redisOptions.enableOfflineQueue,
    enableReadyCheck: true,
    clusterRetryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    // While a master fails over, commands for its slots wait and are retried.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    // TLS certificates of managed clusters name the hosts given, not the addresses they resolve to.
    dnsLookup: (address, callback) => callback(null, address),
  };
}

/** Errors surface through the commands that fail; the event would otherwise crash the process. */
function quiet<T extends RedisClient>(redis: T): T {
  redis.on('error', () => {});
  return redis;
}

/**
 * Opens an ioredis connection with the settings this project relies on: auto-pipelining
 * (commands of concurrent requests share round trips) and unlimited reconnects with a short
 * back-off, so every process heals by itself when Redis comes back. On a Redis Cluster, an
 * ioredis Cluster with the same settings, which follows MOVED and ASK redirections, refreshes
 * its slot table, and retries a command while a failover promotes a replica.
 */
export function createRedis(target: RedisTarget, options: ConnectionOptions): RedisClient {
  const settings = serverOptions(options);
  if (typeof target === 'string') return quiet(new Server(target, settings));
  return quiet(new Cluster(target.cluster, clusterOptions({ ...settings, password: target.password, tls: target.tls ? {} : undefined })));
}

/**
 * A connection of its own to the Redis `redis` talks to (its server, or its cluster's nodes,
 * with its credentials), with `createRedis`'s settings: for a part that is handed a client and
 * needs one more (a subscriber).
 */
export function createRedisBeside(redis: RedisClient, options: ConnectionOptions): RedisClient {
  const settings = serverOptions(options);
  if (redis instanceof Cluster) return quiet(redis.duplicate([], clusterOptions({ ...redis.options.redisOptions, ...settings })));
  return quiet(redis.duplicate(settings));
}

/** Resolves once the connection is ready, or rejects after `timeoutMs`. */
export async function waitForRedis(redis: RedisClient, timeoutMs = 10_000): Promise<void> {
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
