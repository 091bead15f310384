-- Up Migration

-- Files of the OpenAI Files API. An uploaded file's lines are rows of file_lines; a batch's
-- output and error files have no lines of their own: they are read from the batch's lines.
CREATE TABLE files (
  id          text PRIMARY KEY,
  user_id     integer NOT NULL,
  purpose     text NOT NULL,
  filename    text NOT NULL,
  bytes       bigint NOT NULL,
  line_count  integer NOT NULL,
  created_at  bigint NOT NULL,
  -- 'upload', or for a batch's results 'output' or 'error' (then batch_id names the batch)
  kind        text NOT NULL DEFAULT 'upload',
  batch_id    text
);
CREATE INDEX files_by_user ON files (user_id, created_at DESC, id DESC);

CREATE TABLE file_lines (
  file_id  text NOT NULL REFERENCES files (id) ON DELETE CASCADE,
  line_no  integer NOT NULL,
  content  text NOT NULL,
  PRIMARY KEY (file_id, line_no)
);

-- Batches of the OpenAI Batch API, and who runs each: a batch worker holds a lease on it
-- (runner, lease_until) that it renews while it feeds the batch; a lapsed lease is taken over.
CREATE TABLE batches (
  id                 text PRIMARY KEY,
  user_id            integer NOT NULL,
  token_id           integer NOT NULL,
  endpoint           text NOT NULL,
  input_file_id      text NOT NULL,
  completion_window  text NOT NULL,
  status             text NOT NULL,
  metadata           jsonb,
  errors             jsonb,
  output_file_id     text,
  error_file_id      text,
  total              integer NOT NULL DEFAULT 0,
  completed          integer NOT NULL DEFAULT 0,
  failed             integer NOT NULL DEFAULT 0,
  created_at         bigint NOT NULL,
  expires_at         bigint NOT NULL,
  in_progress_at     bigint,
  finalizing_at      bigint,
  completed_at       bigint,
  failed_at          bigint,
  expired_at         bigint,
  cancelling_at      bigint,
  cancelled_at       bigint,
  runner             text,
  lease_until        bigint NOT NULL DEFAULT 0
);
CREATE INDEX batches_by_user ON batches (user_id, created_at DESC, id DESC);
CREATE INDEX batches_to_run ON batches (status) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

-- One row per line of a batch: its request, then its result. state: 0 waiting, 1 sent as a
-- job (job_id), 2 ended (status_code and response, or error).
CREATE TABLE batch_lines (
  batch_id     text NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  line_no      integer NOT NULL,
  custom_id    text NOT NULL,
  body         text NOT NULL,
  state        smallint NOT NULL DEFAULT 0,
  attempts     smallint NOT NULL DEFAULT 0,
  job_id       text,
  status_code  integer,
  request_id   text,
  response     text,
  error        jsonb,
  PRIMARY KEY (batch_id, line_no)
);
CREATE INDEX batch_lines_open ON batch_lines (batch_id, state, line_no) WHERE state < 2;

-- Down Migration
DROP TABLE batch_lines;
DROP TABLE batches;
DROP TABLE file_lines;
DROP TABLE files;
