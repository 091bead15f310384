import type pg from 'pg';

/**
 * Takes a lock of one user's, for one kind of thing they keep, until `client`'s transaction
 * ends (a PostgreSQL advisory lock): what counts a user's things and then adds one runs under
 * it, so two requests at once cannot both pass a cap with the last place.
 */
export async function lockUser(client: pg.ClientBase, kind: 'files' | 'batches', userId: number): Promise<void> {
  await client.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`gateway:${kind}:${userId}`]);
}
