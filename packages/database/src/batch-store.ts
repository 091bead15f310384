import { INT4_MAX, insufficientQuota, rateLimited, RUNNING_BATCH_STATUSES, type BatchCreate, type BatchLineError, type BatchObject, type BatchStatus } from '@gateway/contracts';
import { inTransaction, type Database } from './connection.ts';
import { newBatchId, unixNow } from './ids.ts';
import { storableJson } from './storable.ts';
import { lockUser } from './user-lock.ts';
import { BATCH_ROW_BYTES, usageOf } from './file-store.ts';
import { listBatches } from './batch-list.ts';

/**
 * `RUNNING_BATCH_STATUSES` as an SQL list, for `status IN …`: the batches not yet ended. It must
 * stay the predicate of the partial index `batches_to_run` (migration 1), or PostgreSQL no longer
 * uses that index for them.
 */
export const RUNNING_STATUSES_SQL = `(${RUNNING_BATCH_STATUSES.map((status) => `'${status}'`).join(', ')})`;

/** A batch's row. */
export interface BatchRow {
  id: string;
  user_id: number;
  token_id: number;
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  status: BatchStatus;
  metadata: Record<string, string> | null;
  errors: BatchLineError[] | null;
  output_file_id: string | null;
  error_file_id: string | null;
  total: number;
  completed: number;
  failed: number;
  created_at: string;
  expires_at: string;
  in_progress_at: string | null;
  finalizing_at: string | null;
  completed_at: string | null;
  failed_at: string | null;
  expired_at: string | null;
  cancelling_at: string | null;
  cancelled_at: string | null;
}

const seconds = (value: string | null) => (value === null ? null : Number(value));

/** The row as OpenAI's Batch object. */
export function batchObject(row: BatchRow): BatchObject {
  return {
    id: row.id,
    object: 'batch',
    endpoint: row.endpoint,
    errors: row.errors ? { object: 'list', data: row.errors } : null,
    input_file_id: row.input_file_id,
    completion_window: row.completion_window,
    status: row.status,
    output_file_id: row.output_file_id,
    error_file_id: row.error_file_id,
    created_at: Number(row.created_at),
    in_progress_at: seconds(row.in_progress_at),
    expires_at: seconds(row.expires_at),
    finalizing_at: seconds(row.finalizing_at),
    completed_at: seconds(row.completed_at),
    failed_at: seconds(row.failed_at),
    expired_at: seconds(row.expired_at),
    cancelling_at: seconds(row.cancelling_at),
    cancelled_at: seconds(row.cancelled_at),
    request_counts: { total: row.total, completed: row.completed, failed: row.failed },
    metadata: row.metadata,
  };
}

/** A batch as administrators see it: OpenAI's object, and whose it is. */
export type OwnedBatch = BatchObject & { user_id: number };

const ownedBatchObject = (row: BatchRow): OwnedBatch => ({ ...batchObject(row), user_id: row.user_id });

/** Which batches an administrator's page holds: the `page`th of `pageSize`, by owner and status. */
export interface BatchPageQuery {
  page: number;
  pageSize: number;
  userId?: number;
  statuses?: readonly BatchStatus[];
}

/**
 * Batches as their owners and administrators see them: created, read, listed and cancelled. What
 * runs them is `BatchRuns`.
 */
export class BatchStore {
  private readonly db: Database;

  constructor(db: Database) {
    this.db = db;
  }

  /**
   * A new batch, `validating`, for a batch worker to take; `windowMs` is how long its window
   * lasts. Refused (429) while its user has `maxOpen` batches not yet ended: counted under a lock
   * of the user's, so batches created at once cannot pass it together. `inputBytes`, its input
   * file's size, counts against its user's files until the batch is dropped (`FileStore.usage`).
   */
  async create(owner: { userId: number; tokenId: number }, request: BatchCreate, windowMs: number, maxOpen = Number.MAX_SAFE_INTEGER, inputBytes = 0, maxBytes = Number.MAX_SAFE_INTEGER): Promise<BatchObject> {
    const now = unixNow();
    const row = await inTransaction(this.db, async (client) => {
      await lockUser(client, 'batches', owner.userId);
      // Its copy of the input counts against what the user's files may hold (FILE_USER_MAX_BYTES),
      // under the lock uploads take, so an upload and a batch at once cannot pass it together.
      await lockUser(client, 'files', owner.userId);
      const usage = await usageOf(client, owner.userId);
      const metadata = request.metadata ? storableJson(request.metadata) : null;
      const keeps = inputBytes + BATCH_ROW_BYTES + (metadata === null ? 0 : Buffer.byteLength(metadata));
      if (usage.bytes + keeps > maxBytes) {
        throw insufficientQuota(`this batch would keep ${keeps} bytes (its copy of the lines, its metadata and its row), and this user's files and batches hold ${usage.bytes} of the ${maxBytes} bytes a user may keep (FILE_USER_MAX_BYTES): delete files, or wait for ended batches to be dropped`);
      }
      const { rows } = await client.query<BatchRow>(
        `INSERT INTO batches (id, user_id, token_id, endpoint, input_file_id, completion_window, status, metadata, created_at, expires_at, input_bytes, kept_bytes)
         SELECT $1, $2, $3, $4, $5, $6, 'validating', $7, $8, $9, $11, $12
         WHERE (SELECT count(*) FROM batches WHERE user_id = $2 AND status IN ${RUNNING_STATUSES_SQL}) < $10
         RETURNING *`,
        [newBatchId(), owner.userId, owner.tokenId, request.endpoint, request.input_file_id, request.completion_window,
          metadata, now, now + Math.ceil(windowMs / 1000), Math.min(maxOpen, INT4_MAX), inputBytes, keeps],
      );
      return rows[0];
    });
    if (!row) throw rateLimited(`this user has ${maxOpen} batches not yet ended, the most a user may have (BATCH_USER_OPEN): create more as they end`, 60);
    return batchObject(row);
  }

  /** The batch, if it exists and (when `userId` is given) belongs to that user. */
  async get(id: string, userId?: number): Promise<BatchObject | undefined> {
    const row = await this.row(id, userId);
    return row && batchObject(row);
  }

  /** Any user's batch, with its owner (administrators). */
  async getAny(id: string): Promise<OwnedBatch | undefined> {
    const row = await this.row(id);
    return row && ownedBatchObject(row);
  }

  private async row(id: string, userId?: number): Promise<BatchRow | undefined> {
    const { rows } = await this.db.query<BatchRow>(
      `SELECT * FROM batches WHERE id = $1 AND ($2::integer IS NULL OR user_id = $2)`, [id, userId ?? null]);
    return rows[0];
  }

  /**
   * A page of batches, newest first, after the batch `after` (OpenAI's cursor); every user's
   * when `userId` is unset (administrators). Bounded in bytes (batch-list.ts).
   */
  list(options: { userId?: number; after?: string; limit: number }): Promise<{ data: BatchObject[]; hasMore: boolean }> {
    return listBatches(this.db, options);
  }

  /**
   * A page of every user's batches for administrators, newest first, with the number of batches
   * the filter matches (new-api's pages: `p` and `page_size`, not OpenAI's cursor).
   */
  async page(query: BatchPageQuery): Promise<{ items: OwnedBatch[]; total: number }> {
    const filter = `($1::integer IS NULL OR user_id = $1) AND ($2::text[] IS NULL OR status = ANY($2))`;
    const params = [query.userId ?? null, query.statuses ?? null];
    const [{ rows }, counted] = await Promise.all([
      this.db.query<BatchRow>(`SELECT * FROM batches WHERE ${filter} ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
        [...params, query.pageSize, (query.page - 1) * query.pageSize]),
      this.db.query<{ n: string }>(`SELECT count(*) AS n FROM batches WHERE ${filter}`, params),
    ]);
    return { items: rows.map(ownedBatchObject), total: Number(counted.rows[0]!.n) };
  }

  /**
   * Asks a batch to stop: `validating` or `in_progress` becomes `cancelling` (its batch worker
   * stops feeding it, lets its lines in flight end, then marks it `cancelled`). Undefined when it
   * does not exist for this user; a batch already ending is returned as it is.
   */
  async cancel(id: string, userId?: number): Promise<BatchObject | undefined> {
    const row = await this.cancelRow(id, userId);
    return row && batchObject(row);
  }

  /** The same for any user's batch (administrators), with its owner. */
  async cancelAny(id: string): Promise<OwnedBatch | undefined> {
    const row = await this.cancelRow(id);
    return row && ownedBatchObject(row);
  }

  private async cancelRow(id: string, userId?: number): Promise<BatchRow | undefined> {
    const { rows } = await this.db.query<BatchRow>(
      `UPDATE batches SET status = 'cancelling', cancelling_at = $3
       WHERE id = $1 AND ($2::integer IS NULL OR user_id = $2) AND status IN ('validating', 'in_progress')
       RETURNING *`,
      [id, userId ?? null, unixNow()],
    );
    return rows[0] ?? this.row(id, userId);
  }
}
