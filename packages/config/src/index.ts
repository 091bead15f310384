/**
 * @gateway/config owns the environment and the process lifecycle: every variable the gateway
 * and its workers read is declared here once and parsed with zod (a bad value stops start-up
 * naming the variable), and each service's shutdown on SIGTERM goes through here. Connections
 * to Redis, a server's or a cluster's, are made here too (`redis-connection.ts`), one way for
 * every package.
 */
export { loadConfig, configSchema, ConfigError, type Config } from './config.ts';
export { loadServiceConfig, onShutdown, requireSecretKey } from './lifecycle.ts';
export { nodeFlagsOf, serviceNodeFlags } from './node-flags.ts';
export { createRedis, createRedisBeside, waitForRedis, DEFAULT_FAILOVER_WAIT_MS, type ConnectionOptions } from './redis-connection.ts';
export { redisTargetOf, describeRedisTarget, type RedisTarget, type RedisClient, type ClusterSeed } from './redis-target.ts';
export { luaScripts, defineLuaScripts, type LuaScript } from './lua-scripts.ts';
