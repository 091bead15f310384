-- Up Migration

-- Refusals in the request log (a bad key, a model the key may not use, an invalid body, a quota
-- or rate limit, an overloaded gateway): the first refusal of one credential (or address), status
-- and reason within a window is a row, and its repeats in that window only raise its `count`, so
-- a flood of bad keys grows the log by a bounded number of rows. A request that ran is one row,
-- count 1. `client_ip` is the client's address (behind TRUST_PROXY, the one the proxy wrote);
-- `credential`, for a key the gateway does not know, its mask and a short hash, never the key.
-- Added with defaults, no table rewrite (PostgreSQL 11 and later).
ALTER TABLE request_log ADD COLUMN count integer NOT NULL DEFAULT 1;
ALTER TABLE request_log ADD COLUMN client_ip text;
ALTER TABLE request_log ADD COLUMN credential text;

-- Down Migration
ALTER TABLE request_log DROP COLUMN credential;
ALTER TABLE request_log DROP COLUMN client_ip;
ALTER TABLE request_log DROP COLUMN count;
