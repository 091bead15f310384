import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '@gateway/database';
import { freePort, startEmbeddedPostgres } from '@gateway/local-stack';

/** Names the data directory of a migrated PostgreSQL, stopped, that `spawnPostgres` copies. */
export const POSTGRES_TEMPLATE_ENV = 'GATEWAY_TEST_POSTGRES_TEMPLATE';

/** The settings every test PostgreSQL runs with: fsync off, for speed (postgres-harness.ts). */
export const TEST_POSTGRES_SETTINGS = { fsync: 'off', full_page_writes: 'off' };

/**
 * A PostgreSQL initialised and migrated once for a whole test run, then stopped cleanly: each
 * test file's server starts on a copy of its data directory instead of running initdb, creating
 * its database and migrating (about 3 s a file on this machine, for some 70 files). Made by the
 * suite's global setup (vitest.global-setup.ts), which names it in POSTGRES_TEMPLATE_ENV.
 */
export async function makePostgresTemplate(): Promise<{ dataDir: string; remove(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-postgres-template-'));
  const dataDir = join(dir, 'data');
  const server = await startEmbeddedPostgres({ dataDir, port: await freePort(), settings: TEST_POSTGRES_SETTINGS });
  try {
    await migrate(server.url);
    await untilOtherClientsGone(server.url);
  } finally {
    await server.stop();
  }
  return { dataDir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Waits until the server at `url` has no other client connection (to `database` only, when
 * named), or `timeoutMs` has passed: migrations' connections may still be closing when
 * node-pg-migrate's runner returns, and a server stopped under one fails it with an error event
 * nobody listens to ("terminating connection due to administrator command"), which ended a whole
 * run before its first test beside another.
 */
export async function untilOtherClientsGone(url: string, { database, timeoutMs = 30_000 }: { database?: string; timeoutMs?: number } = {}): Promise<void> {
  const watcher = new pg.Client({ connectionString: url });
  watcher.on('error', () => {});
  await watcher.connect();
  try {
    const until = Date.now() + timeoutMs;
    const others = async () => Number((await watcher.query(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND ($1::text IS NULL OR datname = $1)",
      [database ?? null],
    )).rows[0].n);
    while (Date.now() < until && (await others()) > 0) {
      await new Promise((resolve) => setTimeout(resolve, 50)); // the poll's pace
    }
  } finally {
    await watcher.end();
  }
}

/**
 * Copies the run's template into `dataDir` when there is one, with its owner and modes (run by
 * root, the data belongs to the user postgres, and PostgreSQL refuses a data directory that is
 * not private). Nothing when there is none (a test run outside the suite's setup, the bench):
 * the server is then made from nothing.
 */
export function copyPostgresTemplate(dataDir: string): void {
  const template = process.env[POSTGRES_TEMPLATE_ENV];
  if (template && existsSync(join(template, 'PG_VERSION'))) execFileSync('cp', ['-a', template, dataDir]);
}
