-- What the flex tier saved a run against the standard tier's prices (the result's usage.flexSavedUsd), for the
-- batch report's saving. 0 for runs without flex calls. One ALTER.
ALTER TABLE agent_runs ADD COLUMN flex_saved_usd DECIMAL(16,10) NOT NULL DEFAULT 0;
