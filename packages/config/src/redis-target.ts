import type { Config } from './config.ts';

/** One node of a Redis Cluster, as given in REDIS_CLUSTER_NODES. */
export interface ClusterSeed {
  host: string;
  port: number;
}

/** Where the services find Redis: one server (its URL), or a Redis Cluster (its seed nodes). */
export type RedisTarget = string | { cluster: ClusterSeed[]; password?: string; tls: boolean; failoverWaitMs?: number };

/**
 * The Redis the configuration names: REDIS_CLUSTER_NODES, when set, takes precedence over
 * REDIS_URL (with REDIS_PASSWORD and REDIS_TLS); undefined when neither is set.
 */
export function redisTargetOf(
  config: Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES' | 'REDIS_PASSWORD' | 'REDIS_TLS'> & Partial<Pick<Config, 'REDIS_FAILOVER_WAIT_MS'>>,
): RedisTarget | undefined {
  if (config.REDIS_CLUSTER_NODES) {
    return { cluster: config.REDIS_CLUSTER_NODES, password: config.REDIS_PASSWORD, tls: config.REDIS_TLS, failoverWaitMs: config.REDIS_FAILOVER_WAIT_MS };
  }
  return config.REDIS_URL;
}

/** The target for logs and banners: hosts and ports, never a password. */
export function describeRedisTarget(target: RedisTarget): string {
  if (typeof target === 'string') return target.replace(/\/\/[^@/]*@/, '//***@');
  return `Redis Cluster ${target.cluster.map((s) => `${s.host}:${s.port}`).join(',')}${target.tls ? ' (TLS)' : ''}`;
}

/** A connection to the Redis the configuration names: one server's, or a cluster's. */
export type RedisClient = import('ioredis').Redis | import('ioredis').Cluster;
