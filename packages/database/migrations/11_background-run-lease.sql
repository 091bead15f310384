-- Up Migration

-- When the gateway running a background response last said it still runs it (milliseconds, by
-- PostgreSQL's clock), renewed every few seconds until the run ends. A response still queued or
-- in progress whose run stopped renewing (its gateway killed, say) is ended as failed by the
-- next GET on any gateway, so it never stays in progress forever. Null for a response no run
-- renews (stored before, or not in the background). Added without a default: no table rewrite.
ALTER TABLE stored_responses ADD COLUMN run_renewed_at bigint;

-- Down Migration
ALTER TABLE stored_responses DROP COLUMN run_renewed_at;
