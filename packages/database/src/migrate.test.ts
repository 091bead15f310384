import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnPostgres, type TestPostgres } from '@gateway/testkit';
import { untilOtherClientsGone } from '@gateway/testkit/postgres-template';
import { migrate, MIGRATIONS_DIR } from './migrate.ts';

describe('migrate', () => {
  let postgres: TestPostgres;
  beforeAll(async () => {
    postgres = await spawnPostgres();
  }, 60_000);
  afterAll(() => postgres?.close());

  it('applies each migration once when processes start together (the gateway and the batch worker do)', async () => {
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('CREATE DATABASE fresh');
    await admin.end();
    const fresh = postgres.url.replace(/\/\w+$/, '/fresh');
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => migrate(fresh)));
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    const client = new pg.Client({ connectionString: fresh });
    await client.connect();
    const { rows } = await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY id');
    await client.end();
    // Applied in the order of their number: 10_ after 9_, not after 1_ as text would sort them.
    const files = readdirSync(MIGRATIONS_DIR).map((f) => f.replace(/\.\w+$/, '')).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
    expect(rows.map((r) => r.name)).toEqual(files);
    // The migrations' own connections may still be closing: a server stopped under one that is
    // still open fails it outside any test ("terminating connection due to administrator
    // command", an unhandled error seen in two full runs). Wait until they are gone.
    await untilOtherClientsGone(postgres.url, { database: 'fresh', timeoutMs: 10_000 });
  }, 60_000);
});
