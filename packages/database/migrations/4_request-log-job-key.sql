-- Up Migration

-- A request log row is keyed by its request's own id (its job's), not by the X-Request-Id a
-- client may choose: 40 requests sent at once with one X-Request-Id left 23 rows, those that
-- arrived in the same millisecond written over one another (and, had another user's request
-- come in that millisecond with the same id, its row too). request_id stays what the client saw.
ALTER TABLE request_log ADD COLUMN job_id text;
UPDATE request_log SET job_id = request_id;
ALTER TABLE request_log ALTER COLUMN job_id SET NOT NULL;
ALTER TABLE request_log DROP CONSTRAINT request_log_pkey;
ALTER TABLE request_log ADD PRIMARY KEY (created_at, job_id);

-- Down Migration
ALTER TABLE request_log DROP CONSTRAINT request_log_pkey;
DELETE FROM request_log a USING request_log b
  WHERE a.created_at = b.created_at AND a.request_id = b.request_id AND a.job_id < b.job_id;
ALTER TABLE request_log ADD PRIMARY KEY (created_at, request_id);
ALTER TABLE request_log DROP COLUMN job_id;
