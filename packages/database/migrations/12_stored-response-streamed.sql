-- Up Migration

-- Whether a background response was created with stream: true, so its events are recorded and
-- GET ?stream=true may follow them; one created without is refused at once instead of followed
-- until it ends with no events. Null (not streamed) for every row before; no table rewrite.
ALTER TABLE stored_responses ADD COLUMN streamed boolean;

-- Down Migration
ALTER TABLE stored_responses DROP COLUMN streamed;
