import type { BatchObject } from '@gateway/contracts';
import type { Database } from './connection.ts';
import { batchObject, type BatchRow } from './batch-store.ts';

/** Bad lines each batch of a list names in its `errors`; the batch read alone names them all. */
export const LIST_ERRORS_SHOWN = 10;
/**
 * About the most bytes of batches a list answers with (at least one batch): past it, the page
 * ends early with `has_more`. 100 failed batches of 1,000 named errors were 21 MB an answer,
 * and 30 such lists at once held another tenant's requests on the gateway's event loop (p99
 * 57 ms → 2.2 s).
 */
export const LIST_MAX_BYTES = 256 * 1024;
/** What a batch's object is, in bytes, besides its metadata and errors (ids, times, counts). */
const OBJECT_BYTES = 1024;

const COLUMNS = `id, user_id, token_id, endpoint, input_file_id, completion_window, status, metadata, output_file_id, error_file_id,
  total, completed, failed, created_at, expires_at, in_progress_at, finalizing_at, completed_at, failed_at, expired_at, cancelling_at, cancelled_at`;

/**
 * The page's batches (`$3`: one more than asked, to know whether more follow), their errors cut
 * to `$4` in PostgreSQL, each with the bytes of the batches before it, so that only those that
 * begin within `$5` bytes of the page leave PostgreSQL.
 */
const PAGE = `
  WITH page AS (
    SELECT ${COLUMNS},
      CASE WHEN jsonb_typeof(errors) = 'array' AND jsonb_array_length(errors) > $4
        THEN jsonb_path_query_array(errors, '$[0 to $last]', jsonb_build_object('last', $4 - 1)) ELSE errors END AS errors
    FROM batches b
    WHERE ($1::integer IS NULL OR b.user_id = $1)
      AND ($2::text IS NULL OR (b.created_at, b.id) < (SELECT created_at, id FROM batches WHERE id = $2 AND ($1::integer IS NULL OR user_id = $1)))
    ORDER BY b.created_at DESC, b.id DESC LIMIT $3),
  sized AS (
    SELECT *, coalesce(octet_length(errors::text), 0) + coalesce(octet_length(metadata::text), 0) + ${OBJECT_BYTES} AS bytes FROM page),
  placed AS (
    SELECT *, sum(bytes) OVER (ORDER BY created_at DESC, id DESC) - bytes AS before, count(*) OVER () AS fetched FROM sized)
  SELECT ${COLUMNS}, errors, fetched FROM placed WHERE before < $5 ORDER BY created_at DESC, id DESC`;

/**
 * A page of batches, newest first, after the batch `after` (OpenAI's cursor); every user's when
 * `userId` is unset. At most `limit`, fewer when they pass LIST_MAX_BYTES (`hasMore` then says
 * so, and the next page begins after the last), each naming at most LIST_ERRORS_SHOWN errors.
 */
export async function listBatches(db: Database, options: { userId?: number; after?: string; limit: number }): Promise<{ data: BatchObject[]; hasMore: boolean }> {
  const { rows } = await db.query<BatchRow & { fetched: string }>(PAGE,
    [options.userId ?? null, options.after ?? null, options.limit + 1, LIST_ERRORS_SHOWN, LIST_MAX_BYTES]);
  const data = rows.slice(0, options.limit).map(batchObject);
  return { data, hasMore: Number(rows[0]?.fetched ?? 0) > data.length };
}
