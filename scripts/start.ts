/**
 * `npm start`: the whole gateway on one machine. Starts an embedded redis-server when
 * REDIS_URL is unset (data in REDIS_DATA_DIR, AOF on, noeviction), then the gateway and the
 * three workers as separate processes, and stops them all (Redis last) on Ctrl-C or SIGTERM.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { ConfigError, loadConfig } from '@gateway/config';

const services = ['admin-worker', 'completion-worker', 'audio-worker', 'gateway'] as const;

function fail(message: string): never {
  process.stderr.write(`start: ${message}\n`);
  process.exit(1);
}

let config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) fail(error.message);
  throw error;
}

function freePort(): Promise<number> {
  return new Promise((done, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const { Redis } = await import('ioredis');
  const started = Date.now();
  for (;;) {
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      // Loading a large AOF answers LOADING for a while; wait for a real PONG.
      await probe.ping();
      probe.disconnect();
      return;
    } catch {
      probe.disconnect();
      if (Date.now() - started > timeoutMs) fail(`the embedded redis-server did not answer within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const children: ChildProcess[] = [];
let redisProcess: ChildProcess | undefined;
let redisUrl = config.REDIS_URL;

if (!redisUrl) {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    fail(
      'REDIS_URL is not set and no redis-server was found on PATH.\n' +
        '  Install Redis (Debian/Ubuntu: sudo apt-get install -y redis-server; macOS: brew install redis)\n' +
        '  or point the gateway at a running Redis: REDIS_URL=redis://host:6379 npm start',
    );
  }
  const dir = resolve(config.REDIS_DATA_DIR);
  mkdirSync(dir, { recursive: true });
  const port = Number(process.env.EMBEDDED_REDIS_PORT) || (await freePort());
  redisProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'everysec',
      '--save', '', '--maxmemory-policy', 'noeviction', '--protected-mode', 'yes', '--logfile', 'redis.log'],
    { stdio: 'inherit' },
  );
  redisProcess.once('exit', (code) => {
    if (!stopping) fail(`the embedded redis-server exited (${code}); see ${dir}/redis.log`);
  });
  await waitForPort(port, 60_000);
  redisUrl = `redis://127.0.0.1:${port}`;
  process.stderr.write(`start: embedded redis-server on ${redisUrl}, data in ${dir}\n`);
}

let stopping = false;
for (const name of services) {
  const child = spawn(process.execPath, [`services/${name}/src/main.ts`], {
    stdio: 'inherit',
    env: { ...process.env, REDIS_URL: redisUrl },
  });
  child.once('exit', (code, signal) => {
    if (stopping) return;
    process.stderr.write(`start: ${name} exited (${code ?? signal}); stopping everything\n`);
    void stopAll(1);
  });
  children.push(child);
}

async function stopAll(exitCode: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  await Promise.all(
    children.map((child) => new Promise((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done(null);
      child.once('exit', done);
      child.kill('SIGTERM');
    })),
  );
  if (redisProcess && redisProcess.exitCode === null) {
    const exited = new Promise((done) => redisProcess!.once('exit', done));
    redisProcess.kill('SIGTERM'); // redis flushes its AOF on SIGTERM
    await exited;
  }
  process.exit(exitCode);
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));
