import { ConfigError, loadConfig, type Config } from './config.ts';
import { redisTargetOf, type RedisTarget } from './redis-target.ts';

/**
 * Loads the configuration of a service that needs Redis, or exits naming what is wrong.
 * `redis` is where to find it (REDIS_CLUSTER_NODES, else REDIS_URL).
 */
export function loadServiceConfig(service: string): Config & { redis: RedisTarget } {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${service}: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const redis = redisTargetOf(config);
  if (!redis) {
    process.stderr.write(
      `${service}: REDIS_URL is not set. Point it at a Redis (redis://host:6379) or a Redis Cluster (REDIS_CLUSTER_NODES=host:port,…), or run "npm start", which starts an embedded redis-server.\n`,
    );
    process.exit(1);
  }
  exitWithParent();
  return { ...config, redis };
}

/**
 * SECRET_KEY, for the services that encrypt (the gateway) or decrypt (the model workers)
 * channel keys; without it they stop at start-up, saying how to make one.
 */
export function requireSecretKey(config: Config, service: string): Buffer {
  if (config.SECRET_KEY) return config.SECRET_KEY;
  process.stderr.write(
    `${service}: SECRET_KEY is not set. It encrypts channel keys at rest: 32 random bytes, e.g. SECRET_KEY=$(openssl rand -base64 32). ` +
      '"npm start" makes one in its data directory by itself.\n',
  );
  process.exit(1);
}

/**
 * Test harnesses set GW_PARENT_PID so that a service they started never outlives them (a test
 * runner killed hard cannot clean up its children).
 */
function exitWithParent(): void {
  const parent = Number(process.env.GW_PARENT_PID);
  if (!parent) return;
  const watch = setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch {
      process.exit(1);
    }
  }, 1000);
  watch.unref();
}

/**
 * Runs `shutdown` once on SIGTERM or SIGINT, and exits when it is done or after `timeoutMs`.
 */
export function onShutdown(shutdown: (signal: string) => Promise<void>, timeoutMs: number, log: { info(o: object, m: string): void; error(o: object, m: string): void }): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error({ timeoutMs }, 'shutdown deadline passed; exiting');
      process.exit(1);
    }, timeoutMs + 1000);
    force.unref();
    shutdown(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
