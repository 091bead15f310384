-- Up Migration

-- What a batch keeps against its user (FILE_USER_MAX_BYTES), kept as it is written: its input's
-- copy, its metadata, its errors and 1,024 bytes for its rows. A user's usage is then the sum of
-- one column, read from an index, where a sum over every batch's metadata and errors read and
-- converted each of them on every upload and batch created.
ALTER TABLE batches ADD COLUMN kept_bytes bigint NOT NULL DEFAULT 0;
UPDATE batches SET kept_bytes = input_bytes + 1024 + coalesce(octet_length(metadata::text), 0) + coalesce(octet_length(errors::text), 0);
CREATE INDEX batches_kept_by_user ON batches (user_id) INCLUDE (kept_bytes);

-- Down Migration
DROP INDEX batches_kept_by_user;
ALTER TABLE batches DROP COLUMN kept_bytes;
