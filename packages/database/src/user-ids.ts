import type { Database } from './connection.ts';

/**
 * The highest user id any row of PostgreSQL belongs to (files, batches, the request log), 0 when
 * none. Users are numbered by Redis (the store's sequence); were Redis lost or restored from an
 * old backup, its sequence would start again below ids that still own rows here, and a new user
 * would be handed an old one's files, batches and log. A new user's id is taken above this.
 * Each `max` is read from an index on `user_id`.
 */
export async function highestUserIdOnRecord(db: Database): Promise<number> {
  const { rows } = await db.query<{ id: number | null }>(
    `SELECT GREATEST((SELECT max(user_id) FROM files), (SELECT max(user_id) FROM batches), (SELECT max(user_id) FROM request_log)) AS id`,
  );
  return rows[0]?.id ?? 0;
}
