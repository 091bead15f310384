/**
 * A connection taken out of the pool for a transaction (an upload, a batch's creation) that the
 * server ends meanwhile (a restart, `idle_in_transaction_session_timeout`, an operator's
 * `pg_terminate_backend`) fails its own work, never the process: real PostgreSQL.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import type { Database } from './connection.ts';
import { useTestDatabase } from '@gateway/testkit/test-database';
import { FileStore } from './file-store.ts';

describe('a connection the server ends while it is taken out of the pool', () => {
  const database = useTestDatabase();
  let db: Database;
  beforeAll(() => {
    db = database.db();
  });

  it("fails the upload it carried, and the pool goes on with a new one (no 'error' thrown at the process)", async () => {
    const files = new FileStore(db);
    let killed = false;
    // The connections taken out of the pool, to find the one the server ends and wait for its end.
    const taken: pg.PoolClient[] = [];
    const onAcquire = (client: pg.PoolClient) => taken.push(client);
    db.on('acquire', onAcquire);
    // An upload whose lines come slowly; while it waits, its connection is ended from outside.
    const lines = async function* () {
      yield { line: 1, content: '{"custom_id":"1"}' };
      const { rows } = await db.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND pid <> pg_backend_pid()");
      expect(rows.length).toBeGreaterThan(0);
      await db.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      killed = true;
      // Its FATAL reaches the connection, which emits 'error' while nothing of it is in progress,
      // then 'end' (listened to, not 'error': a listener of ours would hide a missing one).
      const victim = taken.find((client) => (client as unknown as { processID: number }).processID === rows[0]!.pid);
      expect(victim).toBeDefined();
      await new Promise<void>((resolve) => {
        if ((victim as unknown as { _ended?: boolean })._ended) return resolve();
        victim!.once('end', () => resolve());
      });
      for (let i = 2; i <= 2000; i++) yield { line: i, content: `{"custom_id":"${i}"}` };
    };
    await expect(files.upload(91, 'in.jsonl', lines(), { bytes: 100, purpose: 'batch' })).rejects.toThrow();
    db.off('acquire', onAcquire);
    expect(killed).toBe(true);
    // Nothing of it was kept, and the next work gets a working connection.
    expect((await db.query('SELECT count(*)::int AS n FROM files WHERE user_id = 91')).rows[0].n).toBe(0);
    const kept = await files.upload(91, 'again.jsonl', (async function* () { yield { line: 1, content: '{}' }; })(), { bytes: 2, purpose: 'batch' });
    expect(kept.id).toBeTruthy();
  });
});
