-- Up Migration

-- Per request: what it cost, in whole nano-dollars (1e-9 USD), at its model's price on the
-- channel that answered it (@gateway/contracts' `costOf`). NULL: its model had no price, or it
-- was refused or never answered. Added without a default: no table rewrite.
ALTER TABLE request_log ADD COLUMN cost_nanos bigint;

-- Down Migration
ALTER TABLE request_log DROP COLUMN cost_nanos;
