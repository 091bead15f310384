import { inTransaction, type Database } from './connection.ts';
import type pg from 'pg';
import { unixNow } from './ids.ts';
import { lockUser } from './user-lock.ts';

/**
 * The highest user id any row of PostgreSQL belongs to (files, batches, the request log, stored
 * responses), 0 when
 * none. Users are numbered by Redis (the store's sequence); were Redis lost or restored from an
 * old backup, its sequence would start again below ids that still own rows here, and a new user
 * would be handed an old one's files, batches and log. A new user's id is taken above this.
 * Each `max` is read from an index on `user_id`.
 */
export async function highestUserIdOnRecord(db: Database): Promise<number> {
  const { rows } = await db.query<{ id: number | null }>(
    `SELECT GREATEST((SELECT max(user_id) FROM files), (SELECT max(user_id) FROM batches), (SELECT max(user_id) FROM request_log), (SELECT max(user_id) FROM stored_responses)) AS id`,
  );
  return rows[0]?.id ?? 0;
}

/**
 * A deleted user's files, batches and stored responses removed: its uploads, its ended batches
 * with their lines and result files, every response it stored. A batch still running is cancelled (its key is gone with its user, so its
 * lines were refused already); it ends as cancelled and goes with the retention's sweep
 * (BATCH_RETENTION_DAYS). The request log keeps the user's rows, for accounting, until its own
 * retention drops their day.
 */
export async function forgetUser(db: Database, userId: number): Promise<{ files: number; batches: number; cancelled: number }> {
  return inTransaction(db, async (client) => {
    // The locks a batch's creation and an upload's commit take, in their order: one that began
    // before the user was deleted commits first and is removed here, or waits and sees it gone.
    await lockUser(client, 'batches', userId);
    await lockUser(client, 'files', userId);
    await client.query('DELETE FROM stored_responses WHERE user_id = $1', [userId]);
    return forget(client, userId);
  });
}

async function forget(client: pg.ClientBase, userId: number): Promise<{ files: number; batches: number; cancelled: number }> {
  const { rows } = await client.query<{ files: number; batches: number; cancelled: number }>(
    `WITH cancelled AS (
       UPDATE batches SET status = 'cancelling', cancelling_at = $2 WHERE user_id = $1 AND status IN ('validating', 'in_progress') RETURNING id),
     ended AS (SELECT id FROM batches WHERE user_id = $1 AND status IN ('completed', 'failed', 'expired', 'cancelled')),
     files_gone AS (DELETE FROM files WHERE user_id = $1 AND (batch_id IS NULL OR batch_id IN (SELECT id FROM ended)) RETURNING 1),
     batches_gone AS (DELETE FROM batches WHERE id IN (SELECT id FROM ended) RETURNING 1)
     SELECT (SELECT count(*) FROM files_gone)::int AS files, (SELECT count(*) FROM batches_gone)::int AS batches, (SELECT count(*) FROM cancelled)::int AS cancelled`,
    [userId, unixNow()],
  );
  return rows[0]!;
}
