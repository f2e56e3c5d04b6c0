-- The forecast a batch was enqueued with (src/batch/forecast.ts): worst case and expected cost per agent and
-- model and in total, so the report can show forecast against actual. NULL for a batch enqueued without one.
ALTER TABLE agent_batches ADD COLUMN forecast JSON NULL;
