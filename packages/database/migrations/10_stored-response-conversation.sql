-- Up Migration

-- The conversation a stored response is a turn of (a hash, as the router's sticky record names
-- it), so a request continuing it by `previous_response_id` goes to the channel of its last
-- turn, where the provider's prompt cache is. Null for a response stored before, or for one no
-- conversation names. Added without a default: no table rewrite.
ALTER TABLE stored_responses ADD COLUMN conversation_key text;

-- Down Migration
ALTER TABLE stored_responses DROP COLUMN conversation_key;
