import { afterAll, beforeAll } from 'vitest';
import { createDatabase, type Database } from '@gateway/database';
import { spawnPostgres, type TestPostgres } from './postgres-harness.ts';

/**
 * A private PostgreSQL (migrated) and a pool on it for a test file's tests, started before them
 * and stopped after: `server()` and `db()` once they have begun. Imported from
 * `@gateway/testkit/test-database`.
 */
export function useTestDatabase(): { server: () => TestPostgres; db: () => Database } {
  let postgres: TestPostgres | undefined;
  let db: Database | undefined;
  beforeAll(async () => {
    postgres = await spawnPostgres();
    db = createDatabase(postgres.url);
  }, 60_000);
  afterAll(async () => {
    await db?.end();
    await postgres?.close();
  });
  return { server: () => postgres!, db: () => db! };
}
