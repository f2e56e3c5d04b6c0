-- The structured output of a run whose agent has an output schema (docs/structured-output.md). SQL NULL: the
-- agent has no schema; the JSON value `null`: it has one and the run ended without a valid value (the reason is
-- in `error`). One ALTER, so it applies whole or not at all.
ALTER TABLE agent_runs ADD COLUMN output JSON NULL;
