import { join } from 'node:path';
import { runner } from 'node-pg-migrate';

/** The schema's migrations: SQL files, applied in the order of their number. */
export const MIGRATIONS_DIR = join(import.meta.dirname, '..', 'migrations');

/**
 * Brings the database's schema up to date (node-pg-migrate, under its advisory lock, so
 * processes starting together apply each migration once).
 */
export async function migrate(url: string, log: (message: string) => void = () => {}): Promise<void> {
  await runner({
    databaseUrl: url,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'schema_migrations',
    count: Infinity,
    log,
    logger: { debug: () => {}, info: log, warn: log, error: log },
    verbose: false,
  });
}
