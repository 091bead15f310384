-- Up Migration

-- Per request: the prompt tokens the provider read from its prompt cache and wrote to it (where
-- it reported them), and for a turn of a conversation whether it went back to the channel of its
-- last turn (`kept`), had none (`new`) or moved (`moved:<reason>`), so an operator sees why a
-- cache went cold. Added without defaults: no table rewrite.
ALTER TABLE request_log ADD COLUMN cache_read_tokens integer;
ALTER TABLE request_log ADD COLUMN cache_write_tokens integer;
ALTER TABLE request_log ADD COLUMN sticky text;

-- Down Migration
ALTER TABLE request_log DROP COLUMN sticky;
ALTER TABLE request_log DROP COLUMN cache_write_tokens;
ALTER TABLE request_log DROP COLUMN cache_read_tokens;
