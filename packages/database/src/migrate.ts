import { join } from 'node:path';
import { runner } from 'node-pg-migrate';

/** The schema's migrations: SQL files, applied in the order of their number. */
export const MIGRATIONS_DIR = join(import.meta.dirname, '..', 'migrations');

/**
 * Brings the database's schema up to date (node-pg-migrate, under its advisory lock, so
 * processes starting together apply each migration once). The lock is waited for: the gateway and
 * the batch worker start together, and node-pg-migrate's default would fail the second to ask.
 */
export async function migrate(url: string, log: (message: string) => void = () => {}): Promise<void> {
  await runner({
    databaseUrl: url,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'schema_migrations',
    count: Infinity,
    advisoryLockMode: 'wait',
    log,
    logger: { debug: () => {}, info: log, warn: log, error: log },
    verbose: false,
  });
}
