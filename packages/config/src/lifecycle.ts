import closeWithGrace from 'close-with-grace';
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

/** The signals that stop a service; any number of them only ever start one drain. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * After the drain's deadline, the time a process has to end what was left (a gateway's requests,
 * a worker's jobs) and write their log rows and charges, before it is exited outright.
 */
export const RECORDS_GRACE_MS = 5000;

/**
 * Runs `shutdown` once on SIGTERM, SIGINT (and the other signals and uncaught errors
 * close-with-grace listens for), and exits when it is done (0, or 1 after an error). `shutdown`
 * is given a deadline, `timeoutMs` from now, for its drain: past it, it ends what is left and
 * writes its records, and the process exits outright `RECORDS_GRACE_MS` later.
 *
 * close-with-grace exits 1 at once on any signal after the first, whatever `onSecondSignal`
 * does. A service run alone under npm gets a terminal's Ctrl-C twice (from the terminal, and
 * forwarded by npm), and an impatient operator may send another: a second signal must not cut
 * the drain short, so SIGTERM and SIGINT are left out of close-with-grace and start its close
 * here, once.
 */
export function onShutdown(shutdown: (signal: string, deadline: number) => Promise<void>, timeoutMs: number, log: { info(o: object, m: string): void; error(o: object, m: string): void }): void {
  let stopSignal: NodeJS.Signals | undefined;
  let closing = false;
  const closer = closeWithGrace(
    {
      delay: timeoutMs + RECORDS_GRACE_MS,
      logger: false,
      skip: [...STOP_SIGNALS],
      onTimeout: () => log.error({ timeoutMs }, 'shutdown deadline passed; exiting'),
    },
    async ({ signal, err }) => {
      closing = true;
      const deadline = Date.now() + timeoutMs;
      if (err) log.error({ err }, 'uncaught error; shutting down');
      else log.info({ signal: signal ?? stopSignal }, 'shutting down');
      try {
        await shutdown(signal ?? stopSignal ?? 'error', deadline);
      } catch (error) {
        log.error({ err: error }, 'shutdown failed');
        throw error;
      }
    },
  );
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      if (closing) return;
      closing = true;
      stopSignal = signal;
      void closer.close();
    });
  }
}
