-- Up Migration

-- What a user keeps: a batch holds the bytes of its input file against its user (the file's
-- lines are copied into batch_lines, so deleting the file frees nothing) until the batch is
-- dropped, BATCH_RETENTION_DAYS after it ended, with its lines and result files.
ALTER TABLE batches ADD COLUMN input_bytes bigint NOT NULL DEFAULT 0;
CREATE INDEX batches_ended ON batches ((coalesce(completed_at, failed_at, expired_at, cancelled_at)))
  WHERE status IN ('completed', 'failed', 'expired', 'cancelled');
CREATE INDEX files_of_batch ON files (batch_id) WHERE batch_id IS NOT NULL;

-- Down Migration
DROP INDEX files_of_batch;
DROP INDEX batches_ended;
ALTER TABLE batches DROP COLUMN input_bytes;
