import { INT4_MAX, type BatchLineError } from '@gateway/contracts';
import { isRefusedForItsValues, type Database } from './connection.ts';
import { RUNNING_STATUSES_SQL, type BatchRow } from './batch-store.ts';
import { unixNow } from './ids.ts';
import { storableJson } from './storable.ts';
import { usageOf } from './file-store.ts';
import { RESULT_BYTES_SQL } from './result-files.ts';
import { uploadLinePages } from './file-lines.ts';

/** A line handed to a batch worker to run. */
export interface LineToRun {
  line: number;
  customId: string;
  body: string;
  /** Which attempt this is (1 for the first): names its job. */
  attempt: number;
}

/** A line's end: its answer (status and body JSON text), or a failure with no answer. */
export interface LineResult {
  line: number;
  statusCode: number | null;
  requestId: string | null;
  /** The answer's JSON text (a success body, or the error body). */
  response: string | null;
  error: { code: string; message: string } | null;
}

/** How a batch ends once its lines are done (or stop being fed): `failed` when its user's storage cap stopped it. */
export type BatchEnd = 'completed' | 'cancelled' | 'expired' | 'failed';

/**
 * What batch workers do to batches in PostgreSQL: take one (a lease, renewed while it runs, taken
 * over when it lapses), write its lines after validation, hand out lines to run, record their
 * results (each line's result once, and its counts with it), and end it.
 */
export class BatchRuns {
  private readonly db: Database;

  constructor(db: Database) {
    this.db = db;
  }

  /**
   * Takes up to `max` batches nobody runs (or whose runner's lease lapsed) for `runner`, fair
   * between users: a batch's place is its user's batches running now plus its rank among the
   * user's waiting ones, so one user's 40 batches wait behind another user's first, and a user
   * runs at most `perUser` batches at once across every batch worker (each takes its batches in
   * one statement, so two workers taking at the same moment may pass it by one each). A batch
   * being cancelled, or past its window, is taken whatever its user runs: it only ends.
   */
  async claim(runner: string, max: number, leaseMs: number, perUser = Number.MAX_SAFE_INTEGER): Promise<BatchRow[]> {
    if (max <= 0) return [];
    const now = Date.now();
    const { rows } = await this.db.query<BatchRow>(
      `WITH open AS (
         SELECT id, user_id, created_at, lease_until,
                count(*) FILTER (WHERE lease_until >= $3) OVER (PARTITION BY user_id) AS running
         FROM batches WHERE status IN ${RUNNING_STATUSES_SQL}),
       waiting AS (
         SELECT id, created_at, running + row_number() OVER (PARTITION BY user_id ORDER BY created_at, id) AS place
         FROM open WHERE lease_until < $3),
       chosen AS (
         SELECT b.id FROM batches b JOIN waiting w ON w.id = b.id
         WHERE (w.place <= $5 OR b.status = 'cancelling' OR b.expires_at <= $6) AND b.lease_until < $3
         ORDER BY w.place, w.created_at, w.id LIMIT $4
         FOR UPDATE OF b SKIP LOCKED)
       UPDATE batches SET runner = $1, lease_until = $2 WHERE id IN (SELECT id FROM chosen)
       RETURNING *`,
      [runner, now + leaseMs, now, max, Math.min(perUser, INT4_MAX), unixNow()],
    );
    return rows;
  }

  /** Renews `runner`'s leases; returns the ids it still holds (a batch taken over is not among them). */
  async renew(runner: string, ids: string[], leaseMs: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const { rows } = await this.db.query<{ id: string }>(
      `UPDATE batches SET lease_until = $3 WHERE id = ANY($2) AND runner = $1 RETURNING id`, [runner, ids, Date.now() + leaseMs]);
    return new Set(rows.map((r) => r.id));
  }

  /** Gives a batch back (shutdown, an error): any worker may take it again after `afterMs`. */
  async release(runner: string, id: string, afterMs = 0): Promise<void> {
    await this.db.query(`UPDATE batches SET lease_until = $3 WHERE id = $1 AND runner = $2`, [id, runner, afterMs > 0 ? Date.now() + afterMs : 0]);
  }

  /**
   * Drops batches that ended before `endedBefore` (epoch seconds), with their lines and result
   * files, at most `max` of them; resolves with how many. Called again while it drops `max`.
   */
  async dropEnded(endedBefore: number, max = 100): Promise<number> {
    const { rows } = await this.db.query<{ id: string }>(
      `WITH old AS (
         SELECT id FROM batches
         WHERE status IN ('completed', 'failed', 'expired', 'cancelled') AND coalesce(completed_at, failed_at, expired_at, cancelled_at) < $1
         LIMIT $2),
       files_gone AS (DELETE FROM files WHERE batch_id IN (SELECT id FROM old))
       DELETE FROM batches WHERE id IN (SELECT id FROM old) RETURNING id`, [endedBefore, max]);
    return rows.length;
  }

  /**
   * Ends a batch that cannot be run (it stopped with the same kind of error again and again):
   * `failed`, with why, its open lines ended with it. What its other lines answered stays in
   * its rows; it has no result files.
   */
  async failRun(runner: string, id: string, message: string): Promise<void> {
    const error = { code: 'batch_error', message };
    await this.db.query(
      `WITH ended AS (UPDATE batch_lines l SET state = 2, error = $3 WHERE batch_id = $1 AND state < 2 RETURNING ${RESULT_BYTES_SQL} AS bytes)
       UPDATE batches SET status = 'failed', failed_at = $4, errors = $5::text::jsonb,
         kept_bytes = kept_bytes + octet_length($5::text) + (SELECT coalesce(sum(bytes), 0) FROM ended),
         failed = failed + (SELECT count(*) FROM ended), runner = NULL, lease_until = 0
       WHERE id = $1 AND runner = $2 AND status IN ${RUNNING_STATUSES_SQL}`,
      [id, runner, storableJson(error), unixNow(), storableJson([{ ...error, param: null, line: null }])]);
  }

  /** The batch's status now (a cancel may have come), or undefined if it is gone. */
  async statusOf(id: string): Promise<BatchRow['status'] | undefined> {
    const { rows } = await this.db.query<{ status: BatchRow['status'] }>(`SELECT status FROM batches WHERE id = $1`, [id]);
    return rows[0]?.status;
  }

  /** How many lines an input file has, or undefined when it is gone (deleted by its owner). */
  async inputLineCount(fileId: string): Promise<number | undefined> {
    const { rows } = await this.db.query<{ line_count: number }>(`SELECT line_count FROM files WHERE id = $1`, [fileId]);
    return rows[0]?.line_count;
  }

  /** An input file's lines in order, a page of about PAGE_BYTES at a time (one line when it is larger). */
  inputLines(fileId: string): AsyncGenerator<{ line: number; content: string }[]> {
    return uploadLinePages(this.db, fileId);
  }

  /** Writes validated lines (again after a takeover: a line already written is kept). */
  async addLines(batchId: string, lines: { line: number; customId: string; body: string }[]): Promise<void> {
    if (lines.length === 0) return;
    await this.db.query(
      `INSERT INTO batch_lines (batch_id, line_no, custom_id, body)
       SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::text[]) ON CONFLICT DO NOTHING`,
      [batchId, lines.map((l) => l.line), lines.map((l) => l.customId), lines.map((l) => l.body)],
    );
  }

  /** Validation passed: the batch runs. */
  async start(batchId: string, total: number): Promise<void> {
    await this.db.query(
      `UPDATE batches SET status = 'in_progress', total = $2, in_progress_at = $3 WHERE id = $1 AND status = 'validating'`, [batchId, total, unixNow()]);
  }

  /** Validation failed: the batch ends `failed`, its bad lines named. */
  async fail(batchId: string, errors: BatchLineError[]): Promise<void> {
    await this.db.query(`DELETE FROM batch_lines WHERE batch_id = $1`, [batchId]);
    await this.db.query(
      `UPDATE batches SET status = 'failed', errors = $2::text::jsonb, kept_bytes = kept_bytes + octet_length($2::text), failed_at = $3 WHERE id = $1`, [batchId, storableJson(errors), unixNow()]);
  }

  /** Lines sent before (a takeover): their jobs may still run, or have answered meanwhile. */
  async linesInFlight(batchId: string): Promise<LineToRun[]> {
    const { rows } = await this.db.query<{ line_no: number; custom_id: string; body: string; attempts: number }>(
      `SELECT line_no, custom_id, body, attempts FROM batch_lines WHERE batch_id = $1 AND state = 1 ORDER BY line_no`, [batchId]);
    return rows.map((r) => ({ line: r.line_no, customId: r.custom_id, body: r.body, attempt: r.attempts }));
  }

  /**
   * The next `count` waiting lines after line `after`, in order, marked sent (their attempt
   * counted); none unless `runner` still holds the batch's lease, so a worker that lost it sends
   * nothing more. A line once sent never waits again (a retry keeps it sent), so a feed asks
   * after the last line it was given: the index is entered there, not scanned from the batch's
   * first line past every entry its sent lines left behind (dead until a vacuum), which made
   * each call of a 20,000-line batch cost more than the one before.
   *
   * The lines are named by their numbers (`line_no = ANY`), not joined back to by the batch: a
   * planner whose statistics did not know the batch yet (a large one, before autovacuum analysed
   * it) looked each line up among every line of the batch. So does `record`.
   */
  async nextLines(batchId: string, count: number, runner: string, after = 0): Promise<LineToRun[]> {
    if (count <= 0) return [];
    const { rows } = await this.db.query<{ line_no: number; custom_id: string; body: string; attempts: number }>(
      `UPDATE batch_lines SET state = 1, attempts = attempts + 1
       WHERE batch_id = $1 AND state = 0 AND line_no = ANY(ARRAY(
         SELECT line_no FROM batch_lines WHERE batch_id = $1 AND state = 0 AND line_no > $5
           AND EXISTS (SELECT 1 FROM batches WHERE id = $1 AND runner = $3 AND lease_until > $4)
         ORDER BY line_no LIMIT $2))
       RETURNING line_no, custom_id, body, attempts`,
      [batchId, count, runner, Date.now(), after],
    );
    return rows.map((r) => ({ line: r.line_no, customId: r.custom_id, body: r.body, attempt: r.attempts })).sort((a, b) => a.line - b.line);
  }

  /** A line to run again (its job was lost, or timed out): its next attempt gets a new job. */
  async retry(batchId: string, line: number, runner: string): Promise<number> {
    const { rows } = await this.db.query<{ attempts: number }>(
      `UPDATE batch_lines SET attempts = attempts + 1 WHERE batch_id = $1 AND line_no = $2 AND state = 1
         AND EXISTS (SELECT 1 FROM batches WHERE id = $1 AND runner = $3 AND lease_until > $4)
       RETURNING attempts`, [batchId, line, runner, Date.now()]);
    return rows[0]?.attempts ?? 0;
  }

  /**
   * Records results, each line's once: a result for a line already ended (a reply seen twice
   * after a takeover) changes nothing, and the batch's counts move with the rows in one statement.
   */
  async record(batchId: string, results: LineResult[]): Promise<void> {
    if (results.length === 0) return;
    try {
      await this.recordAll(batchId, results);
    } catch (error) {
      // Refused for what a result holds (not for PostgreSQL being away, read-only, full, or a
      // deadlock, which a later try may pass): the results go in halves, and one refused alone
      // ends its line failed with why, so it never holds back the batch's other results (they
      // would be retried with it for good).
      if (!isRefusedForItsValues(error)) throw error;
      if (results.length > 1) {
        const half = Math.ceil(results.length / 2);
        await this.record(batchId, results.slice(0, half));
        await this.record(batchId, results.slice(half));
        return;
      }
      const refused = { code: 'result_not_stored', message: `the line's result could not be stored: ${(error as Error).message}` };
      await this.recordAll(batchId, [{
        line: results[0]!.line, statusCode: 500, requestId: results[0]!.requestId,
        response: JSON.stringify({ error: { ...refused, type: 'server_error', param: null } }), error: refused,
      }]);
    }
  }

  private async recordAll(batchId: string, results: LineResult[]): Promise<void> {
    await this.db.query(
      `WITH r AS (SELECT * FROM unnest($2::integer[], $3::integer[], $4::text[], $5::text[], $6::jsonb[]) AS t(line_no, status_code, request_id, response, error)),
       ended AS (
         UPDATE batch_lines l SET state = 2, status_code = r.status_code, request_id = r.request_id, response = r.response, error = r.error
         FROM r WHERE l.batch_id = $1 AND l.line_no = ANY($2::integer[]) AND l.line_no = r.line_no AND l.state <> 2
         RETURNING l.status_code, ${RESULT_BYTES_SQL} AS bytes)
       UPDATE batches SET
         kept_bytes = kept_bytes + (SELECT coalesce(sum(bytes), 0) FROM ended),
         completed = completed + (SELECT count(*) FROM ended WHERE status_code BETWEEN 200 AND 299),
         failed = failed + (SELECT count(*) FROM ended WHERE status_code IS NULL OR status_code NOT BETWEEN 200 AND 299)
       WHERE id = $1`,
      [batchId, results.map((r) => r.line), results.map((r) => r.statusCode), results.map((r) => r.requestId), results.map((r) => r.response),
        results.map((r) => (r.error ? storableJson(r.error) : null))],
    );
  }

  /** Ends every line not yet ended with `error` (a cancel or an expiry), counted as failed. */
  async endOpenLines(batchId: string, error: { code: string; message: string }): Promise<void> {
    await this.db.query(
      `WITH ended AS (UPDATE batch_lines l SET state = 2, error = $2 WHERE batch_id = $1 AND state < 2 RETURNING ${RESULT_BYTES_SQL} AS bytes)
       UPDATE batches SET failed = failed + (SELECT count(*) FROM ended), kept_bytes = kept_bytes + (SELECT coalesce(sum(bytes), 0) FROM ended)
       WHERE id = $1`, [batchId, storableJson(error)]);
  }

  /** How many lines are not yet ended. */
  async openLines(batchId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>(`SELECT count(*) AS n FROM batch_lines WHERE batch_id = $1 AND state < 2`, [batchId]);
    return Number(rows[0]!.n);
  }

  /** Marks the batch finalizing (its result files being made). */
  async finalizing(batchId: string): Promise<void> {
    await this.db.query(`UPDATE batches SET status = 'finalizing', finalizing_at = $2 WHERE id = $1 AND status = 'in_progress'`, [batchId, unixNow()]);
  }

  /** Ends the batch with its result files, and for a batch that failed, why (its `errors`). */
  async end(batchId: string, end: BatchEnd, files: { outputFileId: string | null; errorFileId: string | null }, error?: { code: string; message: string }): Promise<void> {
    const errors = error ? storableJson([{ ...error, param: null, line: null }]) : null;
    await this.db.query(
      `UPDATE batches SET status = $2, ${end}_at = $3, output_file_id = $4, error_file_id = $5, runner = NULL, lease_until = 0,
         errors = coalesce($6::text::jsonb, errors), kept_bytes = kept_bytes + coalesce(octet_length($6::text), 0)
       WHERE id = $1`,
      [batchId, end, unixNow(), files.outputFileId, files.errorFileId, errors],
    );
  }

  /** What the user keeps now (FILE_USER_MAX_BYTES counts it): uploads, and every batch's copy, metadata, errors and results. */
  async keptBy(userId: number): Promise<number> {
    return (await usageOf(this.db, userId)).bytes;
  }
}
