/**
 * What `docker compose up --build --scale audio-worker=N` needs, checked without a Docker engine
 * (none runs on these machines): the Dockerfile's install step replayed on a fresh copy of
 * exactly the files it copies, from the committed lock file, with the services then started from
 * that copy; and docker-compose.yml read for what scaling a worker service requires.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { nodeFlagsOf } from '@gateway/config';
import { repoRoot, startService, useTestRedis, type ServiceProcess, type TestRedis } from '@gateway/testkit';

interface Instruction { op: string; args: string }

/** The Dockerfile's instructions, with `\` continuations joined and comments dropped. */
function dockerfile(): Instruction[] {
  const text = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8').replace(/\\\r?\n/g, ' ');
  return text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((line) => {
    const [op, ...rest] = line.split(/\s+/);
    return { op: op!.toUpperCase(), args: rest.join(' ') };
  });
}

/**
 * The project's files under `source` as a build context holds them: what git tracks or would
 * track (so no node_modules, no .data), less what .dockerignore drops. In a fresh clone that is
 * exactly the committed files.
 */
function committedFiles(source: string): string[] {
  const ignored = readFileSync(join(repoRoot, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter(Boolean);
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', source], { cwd: repoRoot, encoding: 'utf8' })
    .split('\n').filter((f) => f && existsSync(join(repoRoot, f)));
  return files.filter((f) => !f.split('/').some((part) => ignored.includes(part)));
}

describe('the Dockerfile', () => {
  const context = mkdtempSync(join(tmpdir(), 'gw-image-'));
  let redis: TestRedis | undefined;
  const services: ServiceProcess[] = [];
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await redis?.close();
    rmSync(context, { recursive: true, force: true });
  });

  it('installs from the committed lock file on a fresh copy of the files it copies, and the services start from it', async () => {
    const steps = dockerfile();
    const workdir = join(context, steps.find((s) => s.op === 'WORKDIR')!.args);
    mkdirSync(workdir, { recursive: true });
    const env: Record<string, string> = {};
    for (const step of steps) {
      if (step.op === 'ENV') for (const [, name, value] of step.args.matchAll(/(\w+)=(\S+)/g)) env[name!] = value!;
      if (step.op === 'COPY') {
        const parts = step.args.split(/\s+/);
        const destination = join(workdir, parts.pop()!);
        for (const source of parts) {
          for (const file of committedFiles(source)) {
            const target = parts.length > 1 ? join(destination, file) : join(destination, file.slice(source.length));
            mkdirSync(dirname(target), { recursive: true });
            cpSync(join(repoRoot, file), target);
          }
        }
      }
      if (step.op === 'RUN') {
        // The image's Node (24) and an npm cache of its own, as in a fresh image build.
        const run = spawnSync('sh', ['-c', step.args], {
          cwd: workdir,
          encoding: 'utf8',
          env: {
            ...process.env, ...env,
            PATH: dirname(process.execPath) + delimiter + process.env.PATH,
            npm_config_cache: join(context, 'npm-cache'),
          },
        });
        expect(run.status, `RUN ${step.args}\n${run.stdout}\n${run.stderr}`).toBe(0);
      }
    }
    expect(steps.some((s) => s.op === 'RUN' && /\bnpm ci\b/.test(s.args))).toBe(true);

    // The image's services, started from the copy with production dependencies only.
    redis = await useTestRedis();
    const serviceEnv = { ...env, HOST: '127.0.0.1', REDIS_URL: redis.url, ADMIN_TOKEN: 'root-token-for-the-image-test' };
    services.push(await startService('admin-worker', serviceEnv, 30_000, { cwd: workdir }));
    const gateway = await startService('gateway', serviceEnv, 30_000, { cwd: workdir });
    services.push(gateway);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    const self = await fetch(`${gateway.url}/api/user/self`, { headers: { authorization: 'Bearer root-token-for-the-image-test' } });
    expect(await self.json()).toMatchObject({ success: true, data: { username: 'root', role: 100 } });
  }, 240_000);
});

describe('docker-compose.yml', () => {
  const compose = parse(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { command?: string[]; container_name?: string; ports?: unknown[]; healthcheck?: { test?: unknown }; environment?: Record<string, string> }>;
  };
  const workers = ['completion-worker', 'audio-worker', 'admin-worker'];

  it('runs Redis, PostgreSQL and every service, each with a health check', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['admin-worker', 'audio-worker', 'batch-worker', 'completion-worker', 'gateway', 'postgres', 'redis']);
    for (const [name, service] of Object.entries(compose.services)) expect(service.healthcheck?.test, name).toBeDefined();
  });

  it('lets a worker service scale: no fixed container_name and no published host port', () => {
    for (const name of workers) {
      expect(compose.services[name]!.container_name, name).toBeUndefined();
      expect(compose.services[name]!.ports, name).toBeUndefined();
    }
  });

  it('runs Redis with AOF and noeviction', () => {
    const command = compose.services.redis!.command!.join(' ');
    expect(command).toMatch(/--appendonly yes/);
    expect(command).toMatch(/--maxmemory-policy noeviction/);
  });

  it('gives SECRET_KEY, from the environment, to the gateway and the model workers only', () => {
    for (const name of ['gateway', 'completion-worker', 'audio-worker']) {
      expect(compose.services[name]!.environment?.SECRET_KEY, name).toMatch(/^\$\{SECRET_KEY:\?/);
    }
    expect(compose.services['admin-worker']!.environment?.SECRET_KEY).toBeUndefined();
  });

  it('starts each service from a file the image holds', () => {
    const copied = dockerfile().filter((s) => s.op === 'COPY').flatMap((s) => s.args.split(/\s+/).slice(0, -1));
    for (const name of ['gateway', ...workers]) {
      const entry = compose.services[name]!.command!.at(-1)!;
      expect(copied.some((source) => entry.startsWith(source + '/')), `${name}: ${entry}`).toBe(true);
      expect(committedFiles(entry), entry).toEqual([entry]);
      // With the Node flags the service is meant to run with, as the test kit and npm start pass them.
      expect(compose.services[name]!.command!.slice(1, -1), name).toEqual(nodeFlagsOf(name));
    }
    const cmd = dockerfile().find((s) => s.op === 'CMD')!.args;
    expect(JSON.parse(cmd)).toEqual(['node', ...nodeFlagsOf('gateway'), 'services/gateway/src/main.ts']);
  });
});
