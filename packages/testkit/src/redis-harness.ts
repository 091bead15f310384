import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createRedis, waitForRedis } from '@gateway/config';
import { createStore, type Store } from '@gateway/store';
import { freePort } from '@gateway/local-stack';

export interface TestRedis {
  url: string;
  /** Stops the server (SIGKILL when `hard`), keeping its data directory for restart. */
  stop(options?: { hard?: boolean }): Promise<void>;
  /** Starts it again on the same port and data directory (AOF), after `stop`. */
  restart(): Promise<void>;
  /** Stops it and removes everything it left. */
  close(): Promise<void>;
}

export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Resolves once a redis-server just spawned at `url` answers (the services' own readiness wait). */
export async function waitUntilAnswering(url: string, timeoutMs = 10_000): Promise<void> {
  const probe = createRedis(url, { name: 'test-probe' });
  try {
    await waitForRedis(probe, timeoutMs);
  } finally {
    probe.disconnect();
  }
}

/**
 * redis-server on a leash: when the test process dies, even by SIGKILL, its end of the stdin
 * pipe closes, `read` returns, and redis-server is killed, so no test leaves a server behind.
 */
export const LEASH = 'exec 3<&0; redis-server "$@" </dev/null & pid=$!; (read _ignored <&3; kill -9 $pid 2>/dev/null) & wait $pid';

/** Spawns a private redis-server on a free port, with AOF so a restart keeps the data. */
export async function spawnRedis(): Promise<TestRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gw-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let redisPid = 0;
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes',
    '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--protected-mode', 'no'];
  const start = async () => {
    redisPid = 0;
    child = spawn('sh', ['-c', LEASH, 'redis-server', ...args], { stdio: ['pipe', 'ignore', 'ignore'] });
    // A restart loads the AOF first: tens of MB after a batch, slow on a loaded machine (a
    // fresh-clone CI run took more than 10 s).
    await waitUntilAnswering(url, 60_000);
    const probe = new Redis(url);
    redisPid = Number(/process_id:(\d+)/.exec(await probe.info('server'))?.[1]);
    probe.disconnect();
  };
  const stop = async ({ hard = false } = {}) => {
    const running = child;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((r) => running.once('exit', r));
    let signalled = false;
    try {
      if (redisPid > 0) signalled = process.kill(redisPid, hard ? 'SIGKILL' : 'SIGTERM');
    } catch {
      /* already gone */
    }
    // Its pid unknown (a start that failed before it answered), or the signal not heeded: the
    // leash kills it. Before, a restart that timed out left the old pid here, the signal went
    // nowhere, and the test file's teardown waited for good.
    if (!signalled) running.stdin?.destroy();
    const leashed = setTimeout(() => running.stdin?.destroy(), 15_000);
    await exited;
    clearTimeout(leashed);
    running.stdin?.destroy();
  };
  await start();
  return {
    url,
    stop,
    restart: start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A Redis for a test file: `REDIS_URL` when set (flushed first), else a private redis-server
 * from PATH, else a Testcontainers Redis when a container runtime exists; else a clear failure.
 */
export async function useTestRedis(): Promise<TestRedis> {
  const external = process.env.REDIS_URL;
  if (external) {
    const redis = new Redis(external);
    await redis.flushdb();
    redis.disconnect();
    const unsupported = async () => {
      throw new Error('stop/restart need a spawned redis-server; unset REDIS_URL');
    };
    return { url: external, stop: unsupported, restart: unsupported, close: async () => {} };
  }
  if (hasRedisServer()) return spawnRedis();
  try {
    const { RedisContainer } = await import('@testcontainers/redis');
    const container = await new RedisContainer('redis:7-alpine').start();
    const url = container.getConnectionUrl();
    return {
      url,
      stop: async () => void (await container.stop()),
      restart: async () => {
        throw new Error('restart is not supported on a Testcontainers Redis');
      },
      close: async () => void (await container.stop()),
    };
  } catch (error) {
    throw new Error(
      'tests need a real Redis: set REDIS_URL, or install redis-server (apt-get install -y redis-server), ' +
        `or run a container runtime for Testcontainers (${(error as Error).message})`,
    );
  }
}

/** A test Redis, a client on it and the store over that client, for tests of store-backed parts. */
export interface TestStore {
  server: TestRedis;
  redis: Redis;
  store: Store;
  /** Disconnects the client and stops the Redis. */
  close(): Promise<void>;
}

export async function useTestStore(): Promise<TestStore> {
  const server = await useTestRedis();
  const redis = new Redis(server.url);
  return {
    server,
    redis,
    store: createStore(redis),
    async close() {
      redis.disconnect();
      await server.close();
    },
  };
}
