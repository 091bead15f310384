-- Up Migration

-- Per request: the id of its OpenTelemetry trace, when tracing is on and the request's trace was
-- sampled, so an operator goes from a row to its trace and back. Added without a default: no
-- table rewrite.
ALTER TABLE request_log ADD COLUMN trace_id text;

-- Down Migration
ALTER TABLE request_log DROP COLUMN trace_id;
