-- Up Migration

-- The request log: one row per model request, streamed or not, batch lines included, written
-- off the reply path in batches by whichever process ended the request (the model worker that
-- ran its job, or the gateway for a request that never became a job or was removed unrun).
-- Partitioned by day (UTC) on created_at, the request's arrival: a day's partition is made by the
-- first writer that needs it, and dropped whole after LOG_RETENTION_DAYS.
CREATE TABLE request_log (
  created_at        timestamptz NOT NULL,
  request_id        text NOT NULL,
  user_id           integer NOT NULL,
  token_id          integer NOT NULL,
  token_name        text NOT NULL DEFAULT '',
  route             text NOT NULL,
  model             text NOT NULL,
  upstream_model    text,
  channel_id        integer,
  -- Each channel tried, in order: {channel_id, upstream_model, status?, error?, host?, ms}.
  attempts          jsonb NOT NULL DEFAULT '[]',
  status            integer NOT NULL,
  error_code        text,
  error_message     text,
  priority          text NOT NULL,
  batch_id          text,
  streamed          boolean NOT NULL DEFAULT false,
  prompt_tokens     integer NOT NULL DEFAULT 0,
  completion_tokens integer NOT NULL DEFAULT 0,
  total_tokens      integer NOT NULL DEFAULT 0,
  quota             integer NOT NULL DEFAULT 0,
  queue_ms          integer,
  slot_ms           integer,
  first_byte_ms     integer,
  upstream_ms       integer,
  total_ms          integer NOT NULL,
  -- Only with LOG_CONTENT_CHARS above 0: the prompt and the reply, cut to that many characters.
  prompt            text,
  reply             text,
  -- A job run again after its worker died writes its row again: the last one stands.
  PRIMARY KEY (created_at, request_id)
) PARTITION BY RANGE (created_at);

CREATE INDEX request_log_by_request ON request_log (request_id);
CREATE INDEX request_log_by_user ON request_log (user_id, created_at DESC);
CREATE INDEX request_log_by_token ON request_log (token_id, created_at DESC);
CREATE INDEX request_log_by_channel ON request_log (channel_id, created_at DESC);
CREATE INDEX request_log_by_model ON request_log (model, created_at DESC);
