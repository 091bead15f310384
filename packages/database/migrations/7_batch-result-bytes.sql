-- Up Migration

-- A batch's results count against its user (FILE_USER_MAX_BYTES) as they are written: each
-- ended line's response and error join the batch's kept_bytes. They counted before only through
-- the output and error files' bytes, made when the batch ended: five batches of a 72 KB input
-- kept 876 MB under a 50 MiB cap, and deleting those files gave the bytes back while the rows
-- stayed until the batch was dropped.
UPDATE batches b SET kept_bytes = b.kept_bytes + r.bytes
FROM (SELECT batch_id, sum(coalesce(octet_length(response), 0) + coalesce(octet_length(error::text), 0)) AS bytes
      FROM batch_lines WHERE state = 2 GROUP BY batch_id) r
WHERE r.batch_id = b.id;

-- Down Migration
UPDATE batches b SET kept_bytes = b.kept_bytes - r.bytes
FROM (SELECT batch_id, sum(coalesce(octet_length(response), 0) + coalesce(octet_length(error::text), 0)) AS bytes
      FROM batch_lines WHERE state = 2 GROUP BY batch_id) r
WHERE r.batch_id = b.id;
