-- Up Migration

-- Stored responses of the Responses API (`store`, default true): a user's own, found by id for
-- GET, DELETE, input_items and a later request's previous_response_id or item_reference.
-- input_items is every input item the response was given (a previous response's conversation
-- included), each with an id; response is the response object as its client got it. A row is
-- dropped RESPONSE_RETENTION_DAYS after it was made (expires_at).
CREATE TABLE stored_responses (
  id           text PRIMARY KEY,
  user_id      integer NOT NULL,
  created_at   bigint NOT NULL,
  expires_at   bigint NOT NULL,
  bytes        bigint NOT NULL,
  input_items  jsonb NOT NULL,
  response     jsonb NOT NULL
);
CREATE INDEX stored_responses_by_user ON stored_responses (user_id, created_at DESC);
CREATE INDEX stored_responses_expiring ON stored_responses (expires_at);

-- The events of a streamed background response, numbered as its client saw them, so a client
-- whose connection dropped resumes after the last it read (GET …?stream=true&starting_after=).
CREATE TABLE stored_response_events (
  response_id  text NOT NULL REFERENCES stored_responses (id) ON DELETE CASCADE,
  seq          integer NOT NULL,
  data         text NOT NULL,
  PRIMARY KEY (response_id, seq)
);

-- Down Migration
DROP TABLE stored_response_events;
DROP TABLE stored_responses;
