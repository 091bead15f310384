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

/** How often a command caught by a failover is retried (ioredis's retryDelayOn… settings). */
export const FAILOVER_RETRY_DELAY_MS = 200;
/** REDIS_FAILOVER_WAIT_MS's default: longer than a failover at cluster-node-timeout 15 s (Redis's default). */
export const DEFAULT_FAILOVER_WAIT_MS = 30_000;

/**
 * The settings of a cluster connection around its nodes' `redisOptions`. A command whose master
 * is unreachable, or that the cluster answers CLUSTERDOWN or TRYAGAIN, is retried by ioredis
 * every FAILOVER_RETRY_DELAY_MS (refreshing the slot table each time) until a replica has taken
 * over, for about `failoverWaitMs`: ioredis counts the budget in tries (`maxRedirections`), and
 * before the master is marked failed a try costs two (the slot's owner refuses the connection,
 * then a node answers MOVED back to it); once it is, one (CLUSTERDOWN). So a command caught by a
 * failover costs latency, not an error. Callers with a deadline stop waiting at it (JobClient).
 */
function clusterOptions(redisOptions: RedisOptions, failoverWaitMs = DEFAULT_FAILOVER_WAIT_MS): ClusterOptions {
  return {
    redisOptions,
    // Off on a cluster: measured in test/redis-cluster.e2e.test.ts, about one start in two left
    // the first BullMQ script call (EVALSHA answered NOSCRIPT, retried as EVAL inside an
    // auto-pipeline) waiting forever; with it off, none did.
    enableAutoPipelining: false,
    // Off for the gateway (failFast): a cluster none of whose nodes answers fails commands at
    // once, as one Redis down does. A node of a live cluster always queues (ioredis forces it).
    enableOfflineQueue: redisOptions.enableOfflineQueue,
    // Off on a cluster: ioredis's cluster ready check, run while a master is marked failed and
    // its replica not yet promoted (cluster_state:fail), reconnects without ever settling the
    // connect() it ran for. BullMQ awaits that promise when it reopens a worker's blocking
    // connection, and the lane never fetched again (packages/queue/src/failover-reconnect.test.ts).
    // A command to a shard without a master waits for the failover as any other does.
    enableReadyCheck: false,
    clusterRetryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    retryDelayOnFailover: FAILOVER_RETRY_DELAY_MS,
    retryDelayOnClusterDown: FAILOVER_RETRY_DELAY_MS,
    retryDelayOnTryAgain: FAILOVER_RETRY_DELAY_MS,
    maxRedirections: Math.max(16, 2 * Math.ceil(failoverWaitMs / FAILOVER_RETRY_DELAY_MS)),
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
 * its slot table, and retries a command while a failover promotes a replica (see clusterOptions).
 */
export function createRedis(target: RedisTarget, options: ConnectionOptions): RedisClient {
  const settings = serverOptions(options);
  if (typeof target === 'string') return quiet(new Server(target, settings));
  const nodeSettings = { ...settings, password: target.password, tls: target.tls ? {} : undefined };
  return quiet(new Cluster(target.cluster, clusterOptions(nodeSettings, target.failoverWaitMs)));
}

/**
 * A connection of its own to the Redis `redis` talks to (its server, or its cluster's nodes,
 * with its credentials), with `createRedis`'s settings: for a part that is handed a client and
 * needs one more (a subscriber).
 */
export function createRedisBeside(redis: RedisClient, options: ConnectionOptions): RedisClient {
  const settings = serverOptions(options);
  if (redis instanceof Cluster) {
    const duplicated = clusterOptions({ ...redis.options.redisOptions, ...settings });
    return quiet(redis.duplicate([], { ...duplicated, maxRedirections: redis.options.maxRedirections }));
  }
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
